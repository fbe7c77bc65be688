// Package api holds footprint's public contract, openapi.yaml, and embeds it
// so the server can serve the file byte for byte at /openapi.yaml. The Go
// code generated from it lives in internal/http/gen.
package api

import _ "embed"

// YAML is openapi.yaml exactly as written in this directory.
//
//go:embed openapi.yaml
var YAML []byte
