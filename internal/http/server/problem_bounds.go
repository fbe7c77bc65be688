package server

import (
	"strings"
	"unicode/utf8"
)

// The spec's bounds on a problem's members (components/schemas/Problem and
// ProblemFieldError). A problem may name a field the client made up (an
// unknown property, a map key), so these are enforced on the way out rather
// than trusted: a client sending a 10 kB field name gets a problem that
// names it in a clipped form, not one that breaks the contract.
const (
	maxProblemDetail      = 4000
	maxProblemPath        = 512
	maxProblemSite        = 256
	maxProblemSee         = 256
	maxProblemPointer     = 512
	maxProblemErrorDetail = 1000
)

// bounded returns p with every string member valid UTF-8 and within the
// spec's maxLength (counted in characters, as JSON Schema does).
func (p Problem) bounded() Problem {
	p.Detail = clip(p.Detail, maxProblemDetail)
	p.Path = clip(p.Path, maxProblemPath)
	p.Site = clip(p.Site, maxProblemSite)
	p.See = clip(p.See, maxProblemSee)
	if len(p.Errors) > 0 {
		errs := make([]ProblemError, len(p.Errors))
		for i, e := range p.Errors {
			errs[i] = ProblemError{Pointer: clip(e.Pointer, maxProblemPointer), Detail: clip(e.Detail, maxProblemErrorDetail)}
		}
		p.Errors = errs
	}
	return p
}

// clip makes s valid UTF-8 and at most n characters, ending with "…" when
// it had to cut.
func clip(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	var b strings.Builder
	i := 0
	for _, r := range s {
		if i == n-1 {
			break
		}
		b.WriteRune(r)
		i++
	}
	b.WriteString("…")
	return b.String()
}
