package llm_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/llm"
)

func TestParseSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []llm.Spec
	}{
		{"empty means none", "", nil},
		{"blank means none", " \t ;, ", nil},
		{"minimal", "gpt=openai", []llm.Spec{{Pos: 1, ID: "gpt", Kind: "openai"}}},
		{
			"the documented example",
			"gpt=openai:model=gpt-4o-mini:key_env=OPENAI_API_KEY; local=openai:url=http://ollama:11434:model=llama3.2:timeout=120s",
			[]llm.Spec{
				{Pos: 1, ID: "gpt", Kind: "openai", Model: "gpt-4o-mini", KeyEnv: "OPENAI_API_KEY"},
				{Pos: 2, ID: "local", Kind: "openai", URL: "http://ollama:11434", Model: "llama3.2", Timeout: 120 * time.Second},
			},
		},
		{
			"commas, spaces, IPv6, /v1 and retries",
			" a = openai : url=http://[::1]:8000/v1 : retries=0 , b=openai:retries=5:model=org/model:tag",
			[]llm.Spec{
				{Pos: 1, ID: "a", Kind: "openai", URL: "http://[::1]:8000/v1", Retries: -1},
				{Pos: 2, ID: "b", Kind: "openai", Retries: 5, Model: "org/model:tag"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := llm.ParseSpecs(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseSpecs(%q)\n got %+v\nwant %+v", tt.in, got, tt.want)
			}
		})
	}
}

func TestParseSpecsErrors(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-SECRETVALUE"
	tests := []struct {
		name, in   string
		pos        int
		field, has string
	}{
		{"no kind separator", "gpt", 1, "", "want id=kind"},
		{"bad id", "-x=openai", 1, "id", "does not match"},
		{"missing kind", "a=", 1, "kind", "want openai"},
		{"unknown kind", "a=anthropic", 1, "kind", "want openai"},
		{"ollama is openai", "a=ollama", 1, "kind", "use openai with url="},
		{"unknown key", "a=openai:dims=3", 1, "dims", "unknown key"},
		{"inline key", "a=openai:key=" + secret, 1, "key", "key_env"},
		{"inline api_key", "a=openai;b=openai:api_key=" + secret, 2, "api_key", "key_env"},
		{"secret in kind", "a=" + secret, 1, "kind", "want openai"},
		{"twice", "a=openai:model=x:model=y", 1, "model", "given twice"},
		{"empty model", "a=openai:model=", 1, "model", "must not be empty"},
		{"empty url", "a=openai:url= ", 1, "url", "must not be empty"},
		{"bad key_env", "a=openai:key_env=" + secret + "-x", 1, "key_env", "environment variable name"},
		{"bad timeout", "a=openai:timeout=10", 1, "timeout", "duration"},
		{"negative timeout", "a=openai:timeout=-1s", 1, "timeout", "duration"},
		{"bad retries", "a=openai:retries=x", 1, "retries", "0..10"},
		{"too many retries", "a=openai:retries=11", 1, "retries", "0..10"},
		{"duplicate id", "a=openai;b=openai;a=openai", 3, "id", "already used by spec 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := llm.ParseSpecs(tt.in)
			var se *llm.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("err %v, want *SpecError", err)
			}
			if se.Pos != tt.pos || se.Field != tt.field || !strings.Contains(err.Error(), tt.has) {
				t.Errorf("got %+v (%v), want pos %d field %q containing %q", se, err, tt.pos, tt.field, tt.has)
			}
			if !strings.HasPrefix(err.Error(), "FOOTPRINT_LLMS: spec ") || strings.Contains(err.Error(), "SECRETVALUE") {
				t.Errorf("message %q", err)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	t.Parallel()
	specs, err := llm.ParseSpecs("gpt=openai:model=gpt-4o-mini:key_env=OPENAI_API_KEY;local=openai:url=http://ollama:11434")
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"OPENAI_API_KEY": testKey}
	got, err := llm.Build(specs, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	infos := []core.LLMInfo{got[0].Info(), got[1].Info()}
	if !reflect.DeepEqual(infos, []core.LLMInfo{{ID: "gpt", Model: "gpt-4o-mini"}, {ID: "local"}}) {
		t.Errorf("infos %+v", infos)
	}
	if none, err := llm.Build(nil, nil); err != nil || len(none) != 0 {
		t.Errorf("Build(nil) = %v, %v", none, err)
	}

	for name, tc := range map[string]struct {
		spec  string
		field string
	}{
		"unset key env":      {"a=openai:key_env=MISSING", "key_env"},
		"credentials in url": {"a=openai;b=openai:url=https://u:" + testKey + "@secret-host.example", ""},
		"bad scheme":         {"a=openai:url=ftp://" + testKey, ""},
	} {
		specs, err := llm.ParseSpecs(tc.spec)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = llm.Build(specs, func(string) string { return "" })
		var se *llm.SpecError
		if !errors.As(err, &se) || se.Field != tc.field || se.ID == "" {
			t.Errorf("%s: err %v", name, err)
		}
		checkSafe(t, err, "secret-host")
	}
	if _, err := llm.Build([]llm.Spec{{ID: "a", Kind: "openai"}, {ID: "a", Kind: "openai"}}, nil); err == nil {
		t.Error("duplicate ids accepted")
	}
}
