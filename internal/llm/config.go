package llm

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/providerclient"
)

// EnvLLMs is the environment variable ParseSpecs reads.
const EnvLLMs = "FOOTPRINT_LLMS"

// KindOpenAI is the only provider kind: any OpenAI-compatible
// chat-completions server (OpenAI, Ollama, vLLM, LM Studio).
const KindOpenAI = "openai"

// Spec is one parsed provider spec from FOOTPRINT_LLMS.
//
// The variable is a list of specs separated by ";" or ",". A spec is
//
//	id=kind[:key=value]...
//
// kind is openai. A ":" starts a new option only when a name and "=" follow
// it, so URLs with schemes and ports need no quoting. Spaces around specs,
// names and values are ignored. Keys, all optional:
//
//	url=URL       server root (default https://api.openai.com); requests go
//	              to URL/v1/chat/completions
//	model=NAME    the default model, used when a request names none
//	key_env=VAR   the environment variable that holds the API key
//	timeout=DUR   per attempt, a Go duration (default 60s)
//	retries=N     retries after the first attempt, 0..10 (default 3)
//
// API keys are never written in the spec, only the name of the variable
// holding one, so the whole value is safe to log. Example:
//
//	gpt=openai:model=gpt-4o-mini:key_env=OPENAI_API_KEY; local=openai:url=http://ollama:11434:model=llama3.2:timeout=120s
//
// An empty variable means no providers.
type Spec struct {
	Pos     int // 1-based position in the list, for error messages
	ID      string
	Kind    string
	URL     string // empty: DefaultOpenAIBaseURL
	Model   string
	KeyEnv  string
	Timeout time.Duration // 0: DefaultTimeout
	Retries int           // as Config.MaxRetries: 0 default, negative none
}

// SpecError reports a bad spec: its position, its id if known and the
// offending key. It never quotes a value that could be secret. Its Var is
// EnvLLMs.
type SpecError = providerclient.SpecError

const specKeys = "url, model, key_env, timeout, retries"

// specList is the syntax of FOOTPRINT_LLMS.
var specList = &providerclient.SpecList{
	Var:     EnvLLMs,
	Example: "gpt=openai:model=gpt-4o-mini:key_env=OPENAI_API_KEY",
	Kind: func(kind string) error {
		switch kind {
		case KindOpenAI:
			return nil
		case "ollama", "vllm", "lmstudio":
			return fmt.Errorf("%q is not a kind; use openai with url= pointing at the server (its OpenAI-compatible API)", kind)
		}
		return errors.New("want openai (any OpenAI-compatible server)")
	},
	Key: func(_, key string) error {
		switch key {
		case "url", "model", "key_env", "timeout", "retries":
			return nil
		}
		return errors.New("unknown key; want one of " + specKeys)
	},
}

// ParseSpecs parses the value of FOOTPRINT_LLMS (format on Spec). Empty or
// blank means no providers (nil, nil). Errors are *SpecError.
func ParseSpecs(s string) ([]Spec, error) {
	var specs []Spec
	ids := map[string]int{}
	for i, item := range providerclient.Split(s) {
		sp, err := parseSpec(i+1, item)
		if err != nil {
			return nil, err
		}
		if err := specList.Claim(ids, sp.Pos, sp.ID); err != nil {
			return nil, err
		}
		specs = append(specs, sp)
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
	return sp, nil
}

// set reads one option; specList.Parse has checked the key and the values
// of url, model and key_env.
func (sp *Spec) set(key, val string) error {
	switch key {
	case "url":
		sp.URL = val
	case "model":
		sp.Model = val
	case "key_env":
		sp.KeyEnv = val
	case "timeout":
		d, err := time.ParseDuration(val)
		if err != nil || d <= 0 {
			return errors.New("want a positive Go duration like 60s")
		}
		sp.Timeout = d
	case "retries":
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 || n > MaxMaxRetries {
			return fmt.Errorf("want an integer 0..%d", MaxMaxRetries)
		}
		sp.Retries = n
		if n == 0 {
			sp.Retries = -1 // none, in Config's convention
		}
	}
	return nil
}

// Build constructs the providers specs describe, in order, reading API keys
// through getenv. It makes no request. Errors are *SpecError, name the spec
// and never contain a key.
func Build(specs []Spec, getenv func(string) string, opts ...BuildOption) ([]core.LLM, error) {
	return BuildCounted(specs, getenv, nil, opts...)
}

// BuildOption configures Build.
type BuildOption func(*Config)

// WithTracing traces every provider's calls with tp, adding the messages
// and completions to the spans only when captureContent is set (see
// Config.TracerProvider and Config.CaptureContent).
func WithTracing(tp trace.TracerProvider, captureContent bool) BuildOption {
	return func(c *Config) { c.TracerProvider, c.CaptureContent = tp, captureContent }
}

// BuildCounted is Build with a Config.Counter for every provider (nil for
// none), for the server's provider metrics.
func BuildCounted(specs []Spec, getenv func(string) string, counter func(provider, outcome string), opts ...BuildOption) ([]core.LLM, error) {
	out := make([]core.LLM, 0, len(specs))
	ids := map[string]int{}
	for i, sp := range specs {
		if sp.Pos == 0 {
			sp.Pos = i + 1
		}
		if err := specList.Claim(ids, sp.Pos, sp.ID); err != nil {
			return nil, err
		}
		if sp.Kind != KindOpenAI {
			return nil, specList.Errorf(sp.Pos, sp.ID, "kind", "want openai")
		}
		key, err := specList.APIKey(sp.Pos, sp.ID, sp.KeyEnv, getenv)
		if err != nil {
			return nil, err
		}
		cfg := Config{ID: sp.ID, BaseURL: sp.URL, APIKey: key, Model: sp.Model,
			Timeout: sp.Timeout, MaxRetries: sp.Retries, Counter: counter}
		for _, o := range opts {
			o(&cfg)
		}
		c, err := NewOpenAI(cfg)
		if err != nil {
			return nil, specList.Refused(sp.Pos, sp.ID, err)
		}
		out = append(out, c)
	}
	return out, nil
}
