package providerclient

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

var testList = &SpecList{
	Var:     "TEST_SPECS",
	Example: "a=web:url=http://h",
	Kind: func(kind string) error {
		if kind != "web" {
			return errors.New("want web")
		}
		return nil
	},
	Key: func(_, key string) error {
		switch key {
		case "url", "model", "key_env", "n":
			return nil
		}
		return errors.New("unknown key")
	},
}

func TestSplit(t *testing.T) {
	t.Parallel()
	if got := Split(" a=web ;, ; b=web:url=http://h:80 ,c=web "); !reflect.DeepEqual(got, []string{"a=web", "b=web:url=http://h:80", "c=web"}) {
		t.Errorf("Split = %q", got)
	}
	if got := Split(" \t;, "); len(got) != 0 {
		t.Errorf("Split(blank) = %q", got)
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	var opts []string
	set := func(key, val string) error { opts = append(opts, key+"="+val); return nil }
	head, err := testList.Parse(3, " x = web : url=https://[::1]:8443/v1 : model = org/m:tag :key_env=K_1: n=2", set)
	if err != nil {
		t.Fatal(err)
	}
	if head != (Head{Pos: 3, ID: "x", Kind: "web"}) {
		t.Errorf("head %+v", head)
	}
	if want := []string{"url=https://[::1]:8443/v1", "model=org/m:tag", "key_env=K_1", "n=2"}; !reflect.DeepEqual(opts, want) {
		t.Errorf("options %q, want %q", opts, want)
	}
	_, err = testList.Parse(1, "x=web:n=2:url=u", func(key, _ string) error {
		if key == "n" {
			return errors.New("want 1")
		}
		return nil
	})
	var se *SpecError
	if !errors.As(err, &se) || se.Field != "n" || se.ID != "x" || err.Error() != "TEST_SPECS: spec 1 (x), n: want 1" {
		t.Errorf("set's error: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	const secret = "sk-SECRETVALUE"
	for _, tt := range []struct {
		in, id, field, has string
	}{
		{secret, "", "", "want id=kind[:key=value]..., e.g. a=web:url=http://h"},
		{"-" + secret + "=web", "", "id", "does not match"},
		{"a=" + secret, "a", "kind", "want web"},
		{"a=web:key=" + secret, "a", "key", "key_env=VAR"},
		{"a=web:API_KEY=" + secret, "a", "API_KEY", "never written in the spec"},
		{"a=web:Token=" + secret, "a", "Token", "never written in the spec"},
		{"a=web:colour=" + secret, "a", "colour", "unknown key"},
		{"a=web:n=1:n=2", "a", "n", "given twice"},
		{"a=web:url= ", "a", "url", "must not be empty"},
		{"a=web:model=", "a", "model", "must not be empty"},
		{"a=web:key_env=" + secret, "a", "key_env", "environment variable name"},
	} {
		_, err := testList.Parse(2, tt.in, func(string, string) error { return nil })
		var se *SpecError
		if !errors.As(err, &se) || se.Pos != 2 || se.ID != tt.id || se.Field != tt.field {
			t.Errorf("%s: err %v (%+v)", tt.in, err, se)
			continue
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "TEST_SPECS: spec 2") || !strings.Contains(msg, tt.has) || strings.Contains(msg, "SECRETVALUE") {
			t.Errorf("%s: message %q, want it to contain %q and no secret", tt.in, msg, tt.has)
		}
	}
}

func TestSpecErrorAndHelpers(t *testing.T) {
	t.Parallel()
	if got := testList.Errorf(4, "x", "n", "bad %d", 7).Error(); got != "TEST_SPECS: spec 4 (x), n: bad 7" {
		t.Errorf("Error() = %q", got)
	}
	if got := testList.Errorf(1, "", "", "whole").Error(); got != "TEST_SPECS: spec 1: whole" {
		t.Errorf("Error() = %q", got)
	}

	cause := errors.New("base URL has no host")
	err := testList.Refused(2, "x", cause)
	var se *SpecError
	if !errors.As(err, &se) || se.Err != cause || !errors.Is(err, cause) || se.Field != "" || se.Detail != cause.Error() {
		t.Errorf("Refused = %v (%+v)", err, se)
	}
	if again := testList.Refused(3, "y", err); again != err {
		t.Errorf("Refused rewrapped a SpecError: %v", again)
	}

	ids := map[string]int{}
	if testList.Claim(ids, 1, "a") != nil || testList.Claim(ids, 2, "b") != nil {
		t.Fatal("distinct ids refused")
	}
	if err := testList.Claim(ids, 3, "a"); err == nil || !strings.Contains(err.Error(), "spec 3 (a), id: already used by spec 1") {
		t.Errorf("Claim = %v", err)
	}

	env := map[string]string{"K": "SECRETVALUE"}
	getenv := func(k string) string { return env[k] }
	if key, err := testList.APIKey(1, "a", "", getenv); key != "" || err != nil {
		t.Errorf("no key_env: %q, %v", key, err)
	}
	if key, err := testList.APIKey(1, "a", "K", getenv); key != "SECRETVALUE" || err != nil {
		t.Errorf("key_env=K: %q, %v", key, err)
	}
	_, err = testList.APIKey(1, "a", "MISSING", getenv)
	if !errors.As(err, &se) || se.Field != "key_env" || !strings.Contains(err.Error(), "MISSING is empty or unset") {
		t.Errorf("unset key_env: %v", err)
	}
}
