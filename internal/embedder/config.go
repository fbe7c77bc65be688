package embedder

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
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
// offending key. It never quotes a value that could be secret. Its Var is
// EnvEmbedders.
type SpecError = providerclient.SpecError

// DefaultSpecs is what an empty FOOTPRINT_EMBEDDERS means: the built-in hash
// embedder, id "hash", 384 dimensions.
func DefaultSpecs() []Spec {
	return []Spec{{Pos: 1, ID: "hash", Kind: KindHash, Dims: DefaultHashDims, Default: true}}
}

// keys each kind accepts.
var (
	hashKeys   = []string{"default", "dims"}
	remoteKeys = []string{"default", "dims", "model", "url", "key_env", "send_dims", "batch", "timeout", "retries"}
	kindRE     = regexp.MustCompile(`^[a-z0-9_-]{1,20}$`)
)

// specList is the syntax of FOOTPRINT_EMBEDDERS.
var specList = &providerclient.SpecList{
	Var:     EnvEmbedders,
	Example: "hash=hash:dims=384",
	Kind: func(kind string) error {
		switch {
		case kind == KindHash || kind == KindOpenAI || kind == KindOllama:
			return nil
		case kind == "":
			return errors.New("missing; want hash, openai or ollama")
		case !kindRE.MatchString(kind):
			// Do not quote it: a spec that failed to split can hold
			// anything, a secret included.
			return errors.New("not one of hash, openai, ollama")
		}
		return fmt.Errorf("%q is not one of hash, openai, ollama", kind)
	},
	Key: func(kind, key string) error {
		allowed := remoteKeys
		if kind == KindHash {
			allowed = hashKeys
		}
		if !slices.Contains(allowed, key) {
			return fmt.Errorf("unknown key for kind %s; it takes %s", kind, strings.Join(allowed, ", "))
		}
		return nil
	},
}

// ParseSpecs parses the value of FOOTPRINT_EMBEDDERS (format on Spec). It
// checks syntax, value types, which keys each kind takes, unique ids and at
// most one default; ranges are left to the constructors that Build calls.
// Exactly one returned spec has Default set. Errors are *SpecError.
func ParseSpecs(s string) ([]Spec, error) {
	if strings.TrimSpace(s) == "" {
		return DefaultSpecs(), nil
	}
	var specs []Spec
	for i, item := range providerclient.Split(s) {
		sp, err := parseSpec(i+1, item)
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
	var sp Spec
	head, err := specList.Parse(pos, item, sp.set)
	if err != nil {
		return Spec{}, err
	}
	sp.Pos, sp.ID, sp.Kind = head.Pos, head.ID, head.Kind
	if sp.Kind == KindHash && sp.Dims == 0 {
		sp.Dims = DefaultHashDims
	}
	if sp.Kind != KindHash && sp.Model == "" {
		return Spec{}, specList.Errorf(pos, sp.ID, "model", "required for kind %s", sp.Kind)
	}
	return sp, nil
}

// set reads one option; specList.Parse has checked that the kind takes it,
// and the values of url, model and key_env.
func (sp *Spec) set(key, val string) error {
	var err error
	switch key {
	case "default":
		if sp.Default, err = strconv.ParseBool(val); err != nil {
			return fmt.Errorf("want true or false, got %q", val)
		}
	case "dims":
		if sp.Dims, err = strconv.Atoi(val); err != nil || sp.Dims <= 0 {
			return fmt.Errorf("want a positive integer, got %q", val)
		}
	case "model":
		sp.Model = val
	case "url":
		sp.URL = val
	case "key_env":
		sp.KeyEnv = val
	case "send_dims":
		if sp.SendDims, err = strconv.ParseBool(val); err != nil {
			return fmt.Errorf("want true or false, got %q", val)
		}
	case "batch":
		if sp.Batch, err = strconv.Atoi(val); err != nil || sp.Batch <= 0 {
			return fmt.Errorf("want a positive integer, got %q", val)
		}
	case "timeout":
		if sp.Timeout, err = time.ParseDuration(val); err != nil || sp.Timeout <= 0 {
			return fmt.Errorf("want a positive Go duration like 30s, got %q", val)
		}
	case "retries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return fmt.Errorf("want an integer 0..%d, got %q", MaxMaxRetries, val)
		}
		sp.Retries = n
		if n == 0 {
			sp.Retries = -1 // none, in the constructors' convention
		}
	}
	return nil
}

// resolveDefault checks that ids are unique and at most one spec is the
// default, and marks the first as default if none is.
func resolveDefault(specs []Spec) error {
	ids := map[string]int{}
	def := -1
	for i, sp := range specs {
		if err := specList.Claim(ids, sp.Pos, sp.ID); err != nil {
			return err
		}
		if sp.Default {
			if def >= 0 {
				return specList.Errorf(sp.Pos, sp.ID, "default", "spec %d (%s) is already the default", specs[def].Pos, specs[def].ID)
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
// *SpecError and name the spec; they never contain a key. Options add
// tracing and an observer (telemetry.go).
func Build(specs []Spec, getenv func(string) string, opts ...BuildOption) ([]core.Embedder, error) {
	var bo buildOptions
	for _, o := range opts {
		o(&bo)
	}
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
		e, err := buildOne(sp, getenv, bo.tp)
		if err != nil {
			return nil, specList.Refused(sp.Pos, sp.ID, err)
		}
		if bo.observer != nil {
			e = Observe(e, bo.observer)
		}
		out = append(out, e)
	}
	return out, nil
}

func buildOne(sp Spec, getenv func(string) string, tp trace.TracerProvider) (core.Embedder, error) {
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
		key, err := specList.APIKey(sp.Pos, sp.ID, sp.KeyEnv, getenv)
		if err != nil {
			return nil, err
		}
		p := remoteParams{ID: sp.ID, BaseURL: sp.URL, APIKey: key, Model: sp.Model, Dimensions: sp.Dims,
			SendDimensions: sp.SendDims, BatchSize: sp.Batch, Timeout: sp.Timeout, MaxRetries: sp.Retries, TracerProvider: tp}
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
		return nil, specList.Errorf(sp.Pos, sp.ID, "kind", "%q is not one of hash, openai, ollama", sp.Kind)
	}
}

// checkID validates an embedder id against core.IDPattern.
func checkID(id string) error {
	if !providerclient.ValidID(id) {
		return fmt.Errorf("embedder id %q does not match %s", id, core.IDPattern)
	}
	return nil
}
