// Package turns is the write side of every memory. PostTurn decides what
// each memory writes for a turn (messages, causal snapshots with their query
// vectors, facts, beats), computes vectors and extractions before any
// transaction, and hands the store a TurnWrite whose Decide closure the
// store calls inside its transaction with the facts it read under the
// namespace lock (the highest live turn, the stored vector fingerprints):
// the turn number and the embedder-mismatch decision are made here, the
// store only persists, locks and translates. It also lists, reads and
// forgets a conversation's entries.
package turns
