package providerclient

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/footprint/footprint/internal/core"
)

// SpecError reports a bad spec: its position, its id if known and the
// offending key. It never quotes a value that could be secret.
type SpecError struct {
	Var    string // the environment variable, e.g. FOOTPRINT_LLMS
	Pos    int    // 1-based position in the list
	ID     string
	Field  string // the key, or "id", "kind"; empty for the spec as a whole
	Detail string
	Err    error // the constructor's error, when building refused the spec
}

func (e *SpecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: spec %d", e.Var, e.Pos)
	if e.ID != "" {
		fmt.Fprintf(&b, " (%s)", e.ID)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ", %s", e.Field)
	}
	return b.String() + ": " + e.Detail
}

func (e *SpecError) Unwrap() error { return e.Err }

// Head is what every spec has: its position and id=kind.
type Head struct {
	Pos  int // 1-based position in the list
	ID   string
	Kind string
}

// SpecList describes the spec list one environment variable holds. Its
// format is a list of specs separated by ";" or ",", each
//
//	id=kind[:key=value]...
//
// A ":" starts a new option only when a name and "=" follow it, so URLs
// with schemes and ports need no quoting. Spaces around specs, names and
// values are ignored. API keys are never written in a spec, only the name
// of the variable holding one (key_env=VAR), so the whole value is safe to
// log.
type SpecList struct {
	Var     string // the environment variable; starts every error message
	Example string // a valid spec, shown when one does not split
	// Kind checks a spec's kind; a non-nil error's text is the detail of a
	// SpecError on field "kind", so it must not quote an unchecked kind.
	Kind func(kind string) error
	// Key checks that kind takes key (inline secrets are refused before it
	// is called); a non-nil error's text is the detail.
	Key func(kind, key string) error
}

var (
	optionRE  = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	idRE      = regexp.MustCompile(core.IDPattern)
)

// ValidID reports whether id matches core.IDPattern.
func ValidID(id string) bool { return idRE.MatchString(id) }

// Split returns the specs of a list, trimmed, blank ones dropped; a spec's
// 1-based position is its index plus one.
func Split(s string) []string {
	var items []string
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if item = strings.TrimSpace(item); item != "" {
			items = append(items, item)
		}
	}
	return items
}

// Parse parses the spec item at position pos, handing each option's key
// and value (trimmed) to set, in order. It checks, in order: that the spec
// has the form id=kind, the id against core.IDPattern, the kind (l.Kind),
// then for each option that it is not an API key written inline, that the
// kind takes it (l.Key), that it is given once, and the values whose
// meaning every list shares: url and model must not be empty, key_env must
// name an environment variable. Only then is set called; a non-nil error
// from it is the detail of a SpecError on that key, so it must not quote a
// value that could be secret. Errors are *SpecError.
func (l *SpecList) Parse(pos int, item string, set func(key, val string) error) (Head, error) {
	segs := splitOptions(item)
	id, kind, ok := strings.Cut(segs[0], "=")
	sp := Head{Pos: pos, ID: strings.TrimSpace(id), Kind: strings.TrimSpace(kind)}
	fail := func(field, format string, args ...any) (Head, error) {
		return Head{}, l.Errorf(pos, sp.ID, field, format, args...)
	}
	if !ok {
		sp.ID = "" // unquoted: a spec that failed to split can hold anything
		return fail("", "want id=kind[:key=value]..., e.g. %s", l.Example)
	}
	if !ValidID(sp.ID) {
		sp.ID = ""
		return fail("id", "does not match %s", core.IDPattern)
	}
	if err := l.Kind(sp.Kind); err != nil {
		return fail("kind", "%s", err)
	}
	seen := map[string]bool{}
	for _, opt := range segs[1:] {
		key, val, _ := strings.Cut(opt, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if isSecretKey(key) {
			return fail(key, "API keys are never written in the spec; put the key in an environment variable and name it with key_env=VAR")
		}
		if err := l.Key(sp.Kind, key); err != nil {
			return fail(key, "%s", err)
		}
		if seen[key] {
			return fail(key, "given twice")
		}
		seen[key] = true
		switch key {
		case "url", "model":
			// A URL is not quoted back: it can carry credentials, which
			// the constructors refuse.
			if val == "" {
				return fail(key, "must not be empty")
			}
		case "key_env":
			if !envNameRE.MatchString(val) {
				return fail(key, "want an environment variable name like OPENAI_API_KEY")
			}
		}
		if err := set(key, val); err != nil {
			return fail(key, "%s", err)
		}
	}
	return sp, nil
}

// splitOptions splits a spec at each ":" followed by name=, so
// "url=http://host:8080" stays whole.
func splitOptions(item string) []string {
	var segs []string
	start := 0
	for i := 0; i < len(item); i++ {
		if item[i] == ':' && optionRE.MatchString(item[i+1:]) {
			segs = append(segs, item[start:i])
			start = i + 1
		}
	}
	return append(segs, item[start:])
}

func isSecretKey(key string) bool {
	switch strings.ToLower(key) {
	case "key", "api_key", "apikey", "token", "secret", "password":
		return true
	}
	return false
}

// Errorf returns a *SpecError for the spec at pos. The detail must not
// quote a value that could be secret.
func (l *SpecList) Errorf(pos int, id, field, format string, args ...any) *SpecError {
	return &SpecError{Var: l.Var, Pos: pos, ID: id, Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Refused wraps a constructor's error for the spec at pos; a *SpecError is
// returned as it is. err's text must be log-safe.
func (l *SpecList) Refused(pos int, id string, err error) error {
	var se *SpecError
	if errors.As(err, &se) {
		return err
	}
	return &SpecError{Var: l.Var, Pos: pos, ID: id, Detail: err.Error(), Err: err}
}

// Claim records that the spec at pos uses id in ids (id to position), and
// fails if an earlier spec already did.
func (l *SpecList) Claim(ids map[string]int, pos int, id string) error {
	if prev, dup := ids[id]; dup {
		return l.Errorf(pos, id, "id", "already used by spec %d", prev)
	}
	ids[id] = pos
	return nil
}

// APIKey reads the key the spec at pos names with key_env through getenv:
// "" if keyEnv is empty, an error if the variable is empty or unset. The
// error names the variable, never its value.
func (l *SpecList) APIKey(pos int, id, keyEnv string, getenv func(string) string) (string, error) {
	if keyEnv == "" {
		return "", nil
	}
	key := getenv(keyEnv)
	if key == "" {
		return "", l.Errorf(pos, id, "key_env", "environment variable %s is empty or unset", keyEnv)
	}
	return key, nil
}
