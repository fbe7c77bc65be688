// Package recall is the read side of every memory: per memory, the
// candidates a strategy considers (store rankings for topK, the newest
// entries for the others), the evidence of every candidate (score, rank,
// admitted or why not), the formatted recall, per-chunk injections guarded
// by byte identity, the assembled system prompt and the stored receipt. It
// also indexes document corpora and folds old history with summarize.
package recall
