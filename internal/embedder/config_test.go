package embedder_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/embedder"
)

func TestParseSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []embedder.Spec
	}{
		{"empty is the built-in hash", "", embedder.DefaultSpecs()},
		{"blank is the built-in hash", "  \t ", embedder.DefaultSpecs()},
		{"hash with default dims", "h=hash", []embedder.Spec{{Pos: 1, ID: "h", Kind: "hash", Dims: 384, Default: true}}},
		{
			"the documented example",
			"hash=hash:dims=384; ada=openai:model=text-embedding-3-small:dims=1536:url=https://api.openai.com:key_env=OPENAI_API_KEY:default=true; local=ollama:model=nomic-embed-text:url=http://ollama:11434",
			[]embedder.Spec{
				{Pos: 1, ID: "hash", Kind: "hash", Dims: 384},
				{Pos: 2, ID: "ada", Kind: "openai", Model: "text-embedding-3-small", Dims: 1536,
					URL: "https://api.openai.com", KeyEnv: "OPENAI_API_KEY", Default: true},
				{Pos: 3, ID: "local", Kind: "ollama", Model: "nomic-embed-text", URL: "http://ollama:11434"},
			},
		},
		{
			"commas, spaces, ports, IPv6 and every remote key",
			" a=hash:dims=64 , v = openai : model = bge : url=http://[::1]:8000/v1 : send_dims=true : dims=1024 : batch=32 : timeout=5s : retries=0 ,",
			[]embedder.Spec{
				{Pos: 1, ID: "a", Kind: "hash", Dims: 64, Default: true},
				{Pos: 2, ID: "v", Kind: "openai", Model: "bge", URL: "http://[::1]:8000/v1", SendDims: true, Dims: 1024,
					Batch: 32, Timeout: 5 * time.Second, Retries: -1},
			},
		},
		{"retries=2 kept", "o=ollama:model=m:retries=2", []embedder.Spec{{Pos: 1, ID: "o", Kind: "ollama", Model: "m", Retries: 2, Default: true}}},
		{"default=false leaves the first default", "a=hash:default=false;b=hash",
			[]embedder.Spec{{Pos: 1, ID: "a", Kind: "hash", Dims: 384, Default: true}, {Pos: 2, ID: "b", Kind: "hash", Dims: 384}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := embedder.ParseSpecs(tt.in)
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
	const secret = "sk-inline-SECRET"
	tests := []struct {
		name  string
		in    string
		pos   int
		field string
		want  string
	}{
		{"only separators", " ; , ", 0, "", "lists no embedders"},
		{"no kind", "hash", 1, "", "want id=kind"},
		{"bad id", "a=hash;b c=hash", 2, "id", "does not match"},
		{"unknown kind", "x=bert", 1, "kind", `"bert" is not one of`},
		{"garbled spec not quoted", "a=hash;" + secret, 2, "", "want id=kind"},
		{"kind with junk not quoted", "x=openai/" + secret + "=1", 1, "kind", "not one of"},
		{"missing kind", "x=", 1, "kind", "missing"},
		{"unknown key", "x=hash:colour=" + secret, 1, "colour", "unknown key"},
		{"inline key", "x=openai:model=m:key=" + secret, 1, "key", "never written in the spec"},
		{"inline api_key", "x=openai:model=m:api_key=" + secret, 1, "api_key", "key_env"},
		{"remote key on hash", "x=hash:url=http://h", 1, "url", "unknown key for kind hash"},
		{"key twice", "x=hash:dims=8:dims=16", 1, "dims", "twice"},
		{"dims not a number", "x=hash:dims=big", 1, "dims", "positive integer"},
		{"dims zero", "x=hash:dims=0", 1, "dims", "positive integer"},
		{"bad bool", "x=hash:default=yes please", 1, "default", "true or false"},
		{"bad timeout", "x=openai:model=m:timeout=30", 1, "timeout", "Go duration"},
		{"negative retries", "x=openai:model=m:retries=-1", 1, "retries", "0..10"},
		{"bad key_env", "x=openai:model=m:key_env=" + secret + "-x", 1, "key_env", "variable name"},
		{"missing model", "a=hash;x=ollama:url=http://h", 2, "model", "required"},
		{"empty url", "x=ollama:model=m:url=", 1, "url", "empty"},
		{"duplicate id", "a=hash;b=hash;a=hash:dims=8", 3, "id", "already used by spec 1"},
		{"two defaults", "a=hash:default=true;b=hash:default=true", 2, "default", "spec 1 (a) is already the default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := embedder.ParseSpecs(tt.in)
			if err == nil {
				t.Fatal("accepted")
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error quotes a secret value: %v", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
			if tt.pos == 0 {
				return
			}
			var se *embedder.SpecError
			if !errors.As(err, &se) {
				t.Fatalf("%T is not a *SpecError", err)
			}
			if se.Pos != tt.pos || se.Field != tt.field {
				t.Errorf("Pos, Field = %d, %q; want %d, %q", se.Pos, se.Field, tt.pos, tt.field)
			}
			if !strings.HasPrefix(err.Error(), "FOOTPRINT_EMBEDDERS: spec ") {
				t.Errorf("message %q does not name the variable and position", err)
			}
		})
	}
}

func mapEnv(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestBuildDefault(t *testing.T) {
	t.Parallel()
	specs, err := embedder.ParseSpecs("")
	if err != nil {
		t.Fatal(err)
	}
	es, err := embedder.Build(specs, mapEnv(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 {
		t.Fatalf("%d embedders", len(es))
	}
	info := es[0].Info()
	if info.ID != "hash" || info.Kind != "hash" || info.Dimensions != 384 || !info.Default {
		t.Errorf("Info() = %+v", info)
	}
	if _, err := embedder.Build(nil, mapEnv(nil)); err == nil {
		t.Error("Build(nil) accepted")
	}
}

// TestBuildRemote builds from a spec and embeds end to end, checking that
// the key is read through getenv and sent, and that default=true wins.
func TestBuildRemote(t *testing.T) {
	t.Parallel()
	for _, p := range providers {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, p, func(w http.ResponseWriter, _ *http.Request, req wireRequest, _ int) {
				p.ok(w, echoVecs(req.Input))
			})
			specs, err := embedder.ParseSpecs("h=hash:dims=16; r=" + p.name + ":model=m:url=" + srv.URL + ":key_env=TEST_KEY:dims=3:default=true")
			if err != nil {
				t.Fatal(err)
			}
			es, err := embedder.Build(specs, mapEnv(map[string]string{"TEST_KEY": testKey}))
			if err != nil {
				t.Fatal(err)
			}
			if es[0].Info().Default || !es[1].Info().Default {
				t.Errorf("defaults = %v, %v; want false, true", es[0].Info().Default, es[1].Info().Default)
			}
			if got := es[1].Info(); got.Kind != p.name || got.Dimensions != 3 || got.ID != "r" {
				t.Errorf("Info() = %+v", got)
			}
			out, err := es[1].Embed(context.Background(), inputs(3))
			if err != nil {
				t.Fatal(err)
			}
			checkEcho(t, out)
			if _, auth := srv.requests(); auth[0] != "Bearer "+testKey {
				t.Errorf("Authorization = %q", auth[0])
			}
		})
	}
}

func TestBuildErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		in    string
		env   map[string]string
		pos   int
		field string
		want  string
	}{
		{"key_env unset", "a=hash;b=openai:model=m:key_env=MISSING_KEY", nil, 2, "key_env", "MISSING_KEY is empty or unset"},
		{"hash dims out of range", "a=hash:dims=5", nil, 1, "", "dims must be 8..4096"},
		{"credentials in url", "a=ollama:model=m:url=http://u:" + testKey + "@h", nil, 1, "", "must not carry credentials"},
		{"too many retries", "a=openai:model=m:retries=11", nil, 1, "", "max retries"},
		{"batch too big", "a=openai:model=m:batch=5000", nil, 1, "", "batch size"},
		{"bad key", "a=openai:model=m:key_env=K", map[string]string{"K": testKey + "\n"}, 1, "", "control characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			specs, err := embedder.ParseSpecs(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			_, err = embedder.Build(specs, mapEnv(tt.env))
			if err == nil {
				t.Fatal("accepted")
			}
			checkSafe(t, err)
			var se *embedder.SpecError
			if !errors.As(err, &se) || se.Pos != tt.pos || se.Field != tt.field {
				t.Fatalf("err = %v (%+v), want a SpecError at %d/%q", err, se, tt.pos, tt.field)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}
