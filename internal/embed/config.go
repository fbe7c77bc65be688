package embed

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// EnvEmbedders is the environment variable ParseSpecs reads.
const EnvEmbedders = "FOOTPRINT_EMBEDDERS"

// Embedder kinds.
const (
	KindHash   = "hash"
	KindOpenAI = "openai"
	KindOllama = "ollama"
)

// Spec is one parsed embedder spec from FOOTPRINT_EMBEDDERS.
//
// The variable is a list of specs separated by ";" or ",". A spec is
//
//	id=kind[:key=value]...
//
// kind is hash, openai or ollama. A ":" starts a new option only when a
// name and "=" follow it, so URLs with schemes and ports need no quoting.
// Spaces around specs, names and values are ignored. Keys:
//
//	default=true   this embedder is the default (else the first one is)
//	dims=N         hash: 8..4096, default 384; remote: the expected
//	               size, default learned from the first response
//	model=NAME     openai, ollama: required
//	url=URL        openai, ollama: server root (default
//	               https://api.openai.com, http://localhost:11434)
//	key_env=VAR    openai, ollama: the environment variable that holds
//	               the API key
//	send_dims=true openai, ollama: send dims in the request (models that
//	               can shorten their output)
//	batch=N        openai, ollama: inputs per request (default 256)
//	timeout=DUR    openai, ollama: per attempt, a Go duration (default 30s)
//	retries=N      openai, ollama: retries after the first attempt, 0..10
//	               (default 3)
//
// API keys are never written in the spec, only the name of the variable
// holding one, so the whole value is safe to log. Example:
//
//	hash=hash:dims=384; ada=openai:model=text-embedding-3-small:dims=1536:url=https://api.openai.com:key_env=OPENAI_API_KEY:default=true; local=ollama:model=nomic-embed-text:url=http://ollama:11434
//
// An empty variable means the single spec hash=hash:dims=384.
type Spec struct {
	Pos      int // 1-based position in the list, for error messages
	ID       string
	Kind     string
	Default  bool
	Dims     int // hash: 0 means DefaultHashDims; remote: 0 means learn
	Model    string
	URL      string // empty: the kind's default
	KeyEnv   string
	SendDims bool
	Batch    int           // 0: DefaultBatchSize
	Timeout  time.Duration // 0: DefaultTimeout
	Retries  int           // as OpenAIConfig.MaxRetries: 0 default, negative none
}

// SpecError reports a bad spec: its position, its id if known and the
// offending key. It never quotes a value that could be secret.
type SpecError struct {
	Pos    int
	ID     string
	Field  string // the key, or "id", "kind"; empty if the spec as a whole
	Detail string
	Err    error // the constructor's error, when Build refused the spec
}

func (e *SpecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: spec %d", EnvEmbedders, e.Pos)
	if e.ID != "" {
		fmt.Fprintf(&b, " (%s)", e.ID)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ", %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Detail)
	return b.String()
}

func (e *SpecError) Unwrap() error { return e.Err }

// DefaultSpecs is what an empty FOOTPRINT_EMBEDDERS means: the built-in hash
// embedder, id "hash", 384 dimensions.
func DefaultSpecs() []Spec {
	return []Spec{{Pos: 1, ID: "hash", Kind: KindHash, Dims: DefaultHashDims, Default: true}}
}

// keys each kind accepts.
var (
	hashKeys   = []string{"default", "dims"}
	remoteKeys = []string{"default", "dims", "model", "url", "key_env", "send_dims", "batch", "timeout", "retries"}
	optionRE   = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
	kindRE     = regexp.MustCompile(`^[a-z0-9_-]{1,20}$`)
	envNameRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	idRE       = regexp.MustCompile(core.IDPattern)
)

// ParseSpecs parses the value of FOOTPRINT_EMBEDDERS (format on Spec). It
// checks syntax, value types, which keys each kind takes, unique ids and at
// most one default; ranges are left to the constructors that Build calls.
// Exactly one returned spec has Default set. Errors are *SpecError.
func ParseSpecs(s string) ([]Spec, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultSpecs(), nil
	}
	var specs []Spec
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		sp, err := parseSpec(len(specs)+1, item)
		if err != nil {
			return nil, err
		}
		specs = append(specs, sp)
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("%s lists no embedders; leave it empty for the built-in hash embedder", EnvEmbedders)
	}
	if err := resolveDefault(specs); err != nil {
		return nil, err
	}
	return specs, nil
}

func parseSpec(pos int, item string) (Spec, error) {
	segs := splitOptions(item)
	id, kind, ok := strings.Cut(segs[0], "=")
	id, kind = strings.TrimSpace(id), strings.TrimSpace(kind)
	sp := Spec{Pos: pos, ID: id, Kind: kind}
	fail := func(field, format string, args ...any) (Spec, error) {
		return Spec{}, &SpecError{Pos: pos, ID: sp.ID, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if !ok {
		sp.ID = ""
		return fail("", "want id=kind[:key=value]..., e.g. hash=hash:dims=384")
	}
	if !idRE.MatchString(id) {
		sp.ID = ""
		return fail("id", "%q does not match %s", id, core.IDPattern)
	}
	var allowed []string
	switch kind {
	case KindHash:
		allowed = hashKeys
	case KindOpenAI, KindOllama:
		allowed = remoteKeys
	case "":
		return fail("kind", "missing; want hash, openai or ollama")
	default:
		if !kindRE.MatchString(kind) {
			// Do not quote it: a spec that failed to split can hold
			// anything, a secret included.
			return fail("kind", "not one of hash, openai, ollama")
		}
		return fail("kind", "%q is not one of hash, openai, ollama", kind)
	}
	seen := map[string]bool{}
	for _, opt := range segs[1:] {
		key, val, _ := strings.Cut(opt, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case isSecretKey(key):
			return fail(key, "API keys are never written in the spec; put the key in an environment variable and name it with key_env=VAR")
		case !contains(allowed, key):
			return fail(key, "unknown key for kind %s; it takes %s", kind, strings.Join(allowed, ", "))
		case seen[key]:
			return fail(key, "given twice")
		}
		seen[key] = true
		var err error
		switch key {
		case "default":
			sp.Default, err = strconv.ParseBool(val)
			if err != nil {
				return fail(key, "want true or false, got %q", val)
			}
		case "dims":
			if sp.Dims, err = strconv.Atoi(val); err != nil || sp.Dims <= 0 {
				return fail(key, "want a positive integer, got %q", val)
			}
		case "model":
			if val == "" {
				return fail(key, "must not be empty")
			}
			sp.Model = val
		case "url":
			// Not quoted back: a URL can carry credentials, which the
			// constructor refuses.
			if val == "" {
				return fail(key, "must not be empty")
			}
			sp.URL = val
		case "key_env":
			if !envNameRE.MatchString(val) {
				return fail(key, "want an environment variable name like OPENAI_API_KEY")
			}
			sp.KeyEnv = val
		case "send_dims":
			sp.SendDims, err = strconv.ParseBool(val)
			if err != nil {
				return fail(key, "want true or false, got %q", val)
			}
		case "batch":
			if sp.Batch, err = strconv.Atoi(val); err != nil || sp.Batch <= 0 {
				return fail(key, "want a positive integer, got %q", val)
			}
		case "timeout":
			if sp.Timeout, err = time.ParseDuration(val); err != nil || sp.Timeout <= 0 {
				return fail(key, "want a positive Go duration like 30s, got %q", val)
			}
		case "retries":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 {
				return fail(key, "want an integer 0..%d, got %q", MaxMaxRetries, val)
			}
			sp.Retries = n
			if n == 0 {
				sp.Retries = -1 // none, in the constructors' convention
			}
		}
	}
	if kind == KindHash && sp.Dims == 0 {
		sp.Dims = DefaultHashDims
	}
	if kind != KindHash && sp.Model == "" {
		return fail("model", "required for kind %s", kind)
	}
	return sp, nil
}

// splitOptions splits a spec at each ":" that is followed by name=, so
// "url=https://host:8080" stays whole.
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

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// resolveDefault checks that ids are unique and at most one spec is the
// default, and marks the first as default if none is.
func resolveDefault(specs []Spec) error {
	ids := map[string]int{}
	def := -1
	for i, sp := range specs {
		if prev, dup := ids[sp.ID]; dup {
			return &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "id", Detail: fmt.Sprintf("already used by spec %d", prev)}
		}
		ids[sp.ID] = sp.Pos
		if sp.Default {
			if def >= 0 {
				return &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "default",
					Detail: fmt.Sprintf("spec %d (%s) is already the default", specs[def].Pos, specs[def].ID)}
			}
			def = i
		}
	}
	if def < 0 {
		specs[0].Default = true
	}
	return nil
}

// Build constructs the embedders specs describe, in order, reading API keys
// through getenv (so tests and callers need not touch the process
// environment). The default is the spec marked Default, else the first; its
// Info().Default is true. It makes no network request. Errors are
// *SpecError and name the spec; they never contain a key.
func Build(specs []Spec, getenv func(string) string) ([]core.Embedder, error) {
	if len(specs) == 0 {
		return nil, errors.New("no embedder specs; use DefaultSpecs for the built-in hash embedder")
	}
	specs = append([]Spec(nil), specs...) // resolveDefault may mark one
	for i := range specs {
		if specs[i].Pos == 0 {
			specs[i].Pos = i + 1
		}
	}
	if err := resolveDefault(specs); err != nil {
		return nil, err
	}
	out := make([]core.Embedder, 0, len(specs))
	for _, sp := range specs {
		e, err := buildOne(sp, getenv)
		if err != nil {
			var se *SpecError
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Detail: err.Error(), Err: err}
		}
		out = append(out, e)
	}
	return out, nil
}

func buildOne(sp Spec, getenv func(string) string) (core.Embedder, error) {
	switch sp.Kind {
	case KindHash:
		dims := sp.Dims
		if dims == 0 {
			dims = DefaultHashDims
		}
		h, err := NewHash(sp.ID, dims)
		if err != nil {
			return nil, err
		}
		h.isDefault = sp.Default
		return h, nil
	case KindOpenAI, KindOllama:
		var key string
		if sp.KeyEnv != "" {
			if key = getenv(sp.KeyEnv); key == "" {
				return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "key_env",
					Detail: fmt.Sprintf("environment variable %s is empty or unset", sp.KeyEnv)}
			}
		}
		p := remoteParams{ID: sp.ID, BaseURL: sp.URL, APIKey: key, Model: sp.Model, Dimensions: sp.Dims,
			SendDimensions: sp.SendDims, BatchSize: sp.Batch, Timeout: sp.Timeout, MaxRetries: sp.Retries}
		if sp.Kind == KindOpenAI {
			o, err := NewOpenAI(OpenAIConfig(p))
			if err != nil {
				return nil, err
			}
			o.r.isDefault = sp.Default
			return o, nil
		}
		o, err := NewOllama(OllamaConfig(p))
		if err != nil {
			return nil, err
		}
		o.r.isDefault = sp.Default
		return o, nil
	default:
		return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "kind", Detail: fmt.Sprintf("%q is not one of hash, openai, ollama", sp.Kind)}
	}
}

// checkID validates an embedder id against core.IDPattern.
func checkID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("embedder id %q does not match %s", id, core.IDPattern)
	}
	return nil
}
