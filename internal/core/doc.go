// Package core is footprint's domain kernel: the vocabulary every area of the
// domain shares — error kinds and stable problem codes, identities and their
// namespaces, memory definitions and strategies as values, entries and the
// values they hold, capabilities, and the ports to embedders and LLMs — and
// nothing that decides how a turn is written or a recall is read.
//
// The domain is this kernel plus one package per area, each owning its
// service and the narrow store interface it consumes. Dependencies point one
// way, down this picture; no arrow runs back up:
//
//	internal/app ─────────────▶ every area below (wiring only)
//	explain    (backtracks, ablations, influence) ──▶ recall, runs
//	memories   (definitions, their cache)  ──▶ strategies
//	turns      (the write side: turn numbers, entries, extraction) ──▶ strategies
//	recall     (the read side: rankings, evidence, injections,
//	            corpora, summarize, receipts)  ──▶ strategies
//	runs       (run recordings, bounded honest tails)
//	strategies (catalogue, fields, validation, defaults)
//	core       (this package) ◀── every package above
//
// turns and recall read definitions through an interface of their own
// (Definitions), which memories.Service satisfies; they never import
// memories. No package of the domain imports a transport (net/http), a
// database driver, pgvector or generated code: lint (depguard) and
// imports_test.go enforce it. Stores implement the areas' interfaces and
// translate driver errors to the kinds in errors.go; the HTTP layer maps
// those kinds to statuses in one table. Embeddings are plain []float32.
package core
