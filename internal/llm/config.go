package llm

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
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
// offending key. It never quotes a value that could be secret.
type SpecError struct {
	Pos    int
	ID     string
	Field  string // the key, or "id", "kind"; empty for the spec as a whole
	Detail string
	Err    error // the constructor's error, when Build refused the spec
}

func (e *SpecError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: spec %d", EnvLLMs, e.Pos)
	if e.ID != "" {
		fmt.Fprintf(&b, " (%s)", e.ID)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ", %s", e.Field)
	}
	return b.String() + ": " + e.Detail
}

func (e *SpecError) Unwrap() error { return e.Err }

var (
	optionRE  = regexp.MustCompile(`^\s*[A-Za-z_][A-Za-z0-9_]*\s*=`)
	envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	specKeys  = "url, model, key_env, timeout, retries"
)

// ParseSpecs parses the value of FOOTPRINT_LLMS (format on Spec). Empty or
// blank means no providers (nil, nil). Errors are *SpecError.
func ParseSpecs(s string) ([]Spec, error) {
	var specs []Spec
	ids := map[string]int{}
	for _, item := range strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' }) {
		if item = strings.TrimSpace(item); item == "" {
			continue
		}
		sp, err := parseSpec(len(specs)+1, item)
		if err != nil {
			return nil, err
		}
		if prev, dup := ids[sp.ID]; dup {
			return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "id", Detail: fmt.Sprintf("already used by spec %d", prev)}
		}
		ids[sp.ID] = sp.Pos
		specs = append(specs, sp)
	}
	return specs, nil
}

func parseSpec(pos int, item string) (Spec, error) {
	segs := splitOptions(item)
	id, kind, ok := strings.Cut(segs[0], "=")
	sp := Spec{Pos: pos, ID: strings.TrimSpace(id), Kind: strings.TrimSpace(kind)}
	fail := func(field, format string, args ...any) (Spec, error) {
		return Spec{}, &SpecError{Pos: pos, ID: sp.ID, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if !ok {
		sp.ID = "" // unquoted: a spec that failed to split can hold anything
		return fail("", "want id=kind[:key=value]..., e.g. gpt=openai:model=gpt-4o-mini:key_env=OPENAI_API_KEY")
	}
	if !idRE.MatchString(sp.ID) {
		sp.ID = ""
		return fail("id", "does not match %s", core.IDPattern)
	}
	switch sp.Kind {
	case KindOpenAI:
	case "ollama", "vllm", "lmstudio":
		return fail("kind", "%q is not a kind; use openai with url= pointing at the server (its OpenAI-compatible API)", sp.Kind)
	default:
		return fail("kind", "want openai (any OpenAI-compatible server)")
	}
	seen := map[string]bool{}
	for _, opt := range segs[1:] {
		key, val, _ := strings.Cut(opt, "=")
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		if seen[key] {
			return fail(key, "given twice")
		}
		seen[key] = true
		switch key {
		case "url":
			if val == "" { // not quoted back: a URL can carry credentials
				return fail(key, "must not be empty")
			}
			sp.URL = val
		case "model":
			if val == "" {
				return fail(key, "must not be empty")
			}
			sp.Model = val
		case "key_env":
			if !envNameRE.MatchString(val) {
				return fail(key, "want an environment variable name like OPENAI_API_KEY")
			}
			sp.KeyEnv = val
		case "timeout":
			d, err := time.ParseDuration(val)
			if err != nil || d <= 0 {
				return fail(key, "want a positive Go duration like 60s")
			}
			sp.Timeout = d
		case "retries":
			n, err := strconv.Atoi(val)
			if err != nil || n < 0 || n > MaxMaxRetries {
				return fail(key, "want an integer 0..%d", MaxMaxRetries)
			}
			sp.Retries = n
			if n == 0 {
				sp.Retries = -1 // none, in Config's convention
			}
		case "key", "api_key", "apikey", "token", "secret", "password":
			return fail(key, "API keys are never written in the spec; put the key in an environment variable and name it with key_env=VAR")
		default:
			return fail(key, "unknown key; want one of %s", specKeys)
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

// Build constructs the providers specs describe, in order, reading API keys
// through getenv. It makes no request. Errors are *SpecError, name the spec
// and never contain a key.
func Build(specs []Spec, getenv func(string) string) ([]core.LLM, error) {
	return BuildCounted(specs, getenv, nil)
}

// BuildCounted is Build with a Config.Counter for every provider (nil for
// none), for the server's provider metrics.
func BuildCounted(specs []Spec, getenv func(string) string, counter func(provider, outcome string)) ([]core.LLM, error) {
	out := make([]core.LLM, 0, len(specs))
	ids := map[string]int{}
	for i, sp := range specs {
		if sp.Pos == 0 {
			sp.Pos = i + 1
		}
		if prev, dup := ids[sp.ID]; dup {
			return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "id", Detail: fmt.Sprintf("already used by spec %d", prev)}
		}
		ids[sp.ID] = sp.Pos
		if sp.Kind != KindOpenAI {
			return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "kind", Detail: "want openai"}
		}
		var key string
		if sp.KeyEnv != "" {
			if key = getenv(sp.KeyEnv); key == "" {
				return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Field: "key_env",
					Detail: fmt.Sprintf("environment variable %s is empty or unset", sp.KeyEnv)}
			}
		}
		c, err := NewOpenAI(Config{ID: sp.ID, BaseURL: sp.URL, APIKey: key, Model: sp.Model,
			Timeout: sp.Timeout, MaxRetries: sp.Retries, Counter: counter})
		if err != nil {
			return nil, &SpecError{Pos: sp.Pos, ID: sp.ID, Detail: err.Error(), Err: err}
		}
		out = append(out, c)
	}
	return out, nil
}
