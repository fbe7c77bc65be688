// Package migrations holds footprint's Postgres schema as plain, numbered goose SQL files,
// embedded so the binary carries its own schema and applies it at start-up (see
// internal/store/pg). Files are append-only once released: change the schema with a new file,
// never by editing an applied one (goose records versions, not contents).
package migrations

import "embed"

// FS holds every migration (*.sql at the root), in the layout goose's Provider expects.
//
//go:embed *.sql
var FS embed.FS
