package core

import (
	"strings"
)

// DefaultTenant is the tenant of a deployment with no API keys configured.
const DefaultTenant = "default"

// CorpusNamespace is the namespace of a corpus memory's document chunks:
// tenant-wide, never a conversation's (those always contain '/').
const CorpusNamespace = ""

// Identity names one conversation: whose data (Tenant, from the API key),
// which end user (Principal, optional) and which conversation.
type Identity struct {
	Tenant         string
	Principal      string
	ConversationID string
}

// Namespace returns the injective encoding of the identity:
// enc(tenant)/enc(principal)/enc(conversationId). Two distinct identities
// never share a namespace, because enc never emits a bare '/' and maps the
// empty string and a literal "_" to different outputs.
func (id Identity) Namespace() string {
	return encodeSegment(id.Tenant) + "/" + encodeSegment(id.Principal) + "/" + encodeSegment(id.ConversationID)
}

// PrincipalNamespace returns the namespace of the identity's principal:
// enc(tenant)/enc(principal)/_, the seed's encoding of an identity without a
// conversation. Principal-scoped memories keep their entries there. It is
// never a conversation's namespace: a conversation id "_" encodes as %5F.
func (id Identity) PrincipalNamespace() string {
	return encodeSegment(id.Tenant) + "/" + encodeSegment(id.Principal) + "/_"
}

// NamespaceFor returns where memory m keeps this identity's entries: the
// principal's namespace for a principal-scoped memory, the corpus namespace
// for a corpus, the conversation's otherwise.
func (id Identity) NamespaceFor(m Memory) string {
	switch {
	case m.Corpus:
		return CorpusNamespace
	case m.PrincipalScoped():
		return id.PrincipalNamespace()
	}
	return id.Namespace()
}

// ConversationsPrefix returns the prefix every conversation namespace of the
// identity's principal starts with, enc(tenant)/enc(principal)/. The
// principal's own namespace starts with it too (it ends in "_").
func (id Identity) ConversationsPrefix() string {
	return encodeSegment(id.Tenant) + "/" + encodeSegment(id.Principal) + "/"
}

// IsPrincipalNamespace reports whether ns is a principal's namespace
// (tenant/principal/_) rather than a conversation's or a corpus's.
func IsPrincipalNamespace(ns string) bool { return strings.HasSuffix(ns, "/_") }

// ScopedEntryID returns the id of an entry written from conversation into a
// principal-scoped memory: the conversation's id (msg-3-0) followed by "~"
// and the conversation, so that turns of two conversations never collide.
// Facts keep their id (fact:{key}): one statement per key across
// conversations, the newest winning. "~" appears in no conversation id.
func ScopedEntryID(id, conversation string) string { return id + "~" + conversation }

// encodeSegment maps missing/empty to "_", a literal "_" to "%5F", and
// otherwise escapes '%' (first, so escapes stay unambiguous) and '/'.
func encodeSegment(s string) string {
	switch s {
	case "":
		return "_"
	case "_":
		return "%5F"
	}
	if !strings.ContainsAny(s, "%/") {
		return s
	}
	s = strings.ReplaceAll(s, "%", "%25")
	return strings.ReplaceAll(s, "/", "%2F")
}

// PrincipalPrefix is what every namespace of the identity's tenant and
// principal starts with: enc(tenant)/enc(principal)/. No namespace of
// another principal starts with it, since enc never emits a bare '/'.
func (id Identity) PrincipalPrefix() string {
	return encodeSegment(id.Tenant) + "/" + encodeSegment(id.Principal) + "/"
}

// TenantPrefix is what every conversation namespace of the identity's
// tenant starts with: enc(tenant)/.
func (id Identity) TenantPrefix() string {
	return encodeSegment(id.Tenant) + "/"
}

// ParseNamespace is Namespace's inverse: the identity a namespace encodes.
// It reports false for a string that no identity encodes to (the corpus
// namespace, a string of more or fewer than three segments, an escape
// Namespace never writes).
func ParseNamespace(ns string) (Identity, bool) {
	parts := strings.Split(ns, "/")
	if len(parts) != 3 {
		return Identity{}, false
	}
	var out [3]string
	for i, p := range parts {
		s, ok := decodeSegment(p)
		if !ok {
			return Identity{}, false
		}
		out[i] = s
	}
	return Identity{Tenant: out[0], Principal: out[1], ConversationID: out[2]}, true
}

// decodeSegment is encodeSegment's inverse, or false for a segment it
// never writes.
func decodeSegment(s string) (string, bool) {
	switch s {
	case "_":
		return "", true
	case "%5F":
		return "_", true
	case "":
		return "", false
	}
	if !strings.Contains(s, "%") {
		return s, true
	}
	var sb strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			sb.WriteByte(s[i])
			continue
		}
		if i+3 > len(s) {
			return "", false
		}
		switch s[i+1 : i+3] {
		case "25":
			sb.WriteByte('%')
		case "2F":
			sb.WriteByte('/')
		default:
			return "", false
		}
		i += 2
	}
	return sb.String(), true
}
