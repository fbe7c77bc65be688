package core

import (
	"crypto/rand"
	"encoding/base32"
)

// idEncoding spells random ids in lower-case base32, so they are safe in URLs and paths.
var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// NewID returns prefix followed by n random bytes in lower-case base32, e.g. NewID("rcl_", 15)
// for a recall receipt's id.
func NewID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return prefix + idEncoding.EncodeToString(b)
}
