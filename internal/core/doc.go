// Package core is footprint's domain layer: the strategy catalogue, the
// memory-definition validation pipeline, identities and namespaces, and the
// store interfaces the persistence layers implement.
//
// It imports no HTTP, database driver or generated package (a test enforces
// this): transports and stores adapt to core, never the other way round.
// Embeddings are plain []float32 here.
package core
