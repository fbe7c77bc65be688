package core_test

import (
	"testing"

	"github.com/footprint/footprint/internal/core"
)

func TestParseNamespaceInvertsNamespace(t *testing.T) {
	t.Parallel()
	ids := []core.Identity{
		{Tenant: "acme", Principal: "user-42", ConversationID: "thread-7"},
		{ConversationID: "c1"},
		{Tenant: "a/b", ConversationID: "c"},
		{Tenant: "_", Principal: "%", ConversationID: "a%2Fb/_"},
		{Tenant: "t", Principal: "p", ConversationID: ""},
	}
	for _, id := range ids {
		got, ok := core.ParseNamespace(id.Namespace())
		if !ok || got != id {
			t.Errorf("ParseNamespace(%q) = %+v, %v; want %+v", id.Namespace(), got, ok, id)
		}
		if p := id.PrincipalPrefix(); len(id.Namespace()) <= len(p) || id.Namespace()[:len(p)] != p {
			t.Errorf("%q does not start with its principal prefix %q", id.Namespace(), p)
		}
	}
	for _, bad := range []string{"", "a/b", "a/b/c/d", "a/%41/c", "a/b/%2", "a//c"} {
		if got, ok := core.ParseNamespace(bad); ok {
			t.Errorf("ParseNamespace(%q) = %+v, want false", bad, got)
		}
	}
}
