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
