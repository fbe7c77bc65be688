package server

import "testing"

// TestEveryProblemHasAPage: the table of titles (every code the server sends) and the pages
// agree, so no problem's type is a dead link.
func TestEveryProblemHasAPage(t *testing.T) {
	for code := range titles {
		d, ok := problemDocs[code]
		if !ok || d.Means == "" || d.Fix == "" || len(d.Status) == 0 {
			t.Errorf("problem %q has no page", code)
		}
	}
	for code := range problemDocs {
		if titles[code] == "" {
			t.Errorf("page %q names no code the server sends", code)
		}
	}
}
