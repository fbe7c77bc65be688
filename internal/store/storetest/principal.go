package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

// testPrincipals runs the conformance cases of principal-scoped memories: a turn writes into
// its conversation's namespace and, locked after it, into its principal's; facts there are
// upserted across conversations and record what they superseded; turn numbers stay per
// conversation; forgetting a principal erases everything of theirs and nothing else.
func testPrincipals(t *testing.T, s app.Store) {
	runTenantCases(t, s, "principal", []tenantCase{
		{"WritesBothNamespaces", testPrincipalWrite},
		{"FactSupersedesAcrossConversations", testPrincipalSupersedes},
		{"TurnNumbersStayPerConversation", testPrincipalTurnNumbers},
		{"TurnsKeptOnlyByThePrincipalNumber", testPrincipalOnlyTurns},
		{"FingerprintsPerPrincipal", testPrincipalFingerprints},
		{"ConcurrentConversationsOneFact", testPrincipalConcurrent},
		{"ForgetPrincipal", testForgetPrincipalStore},
	})
}

const profileMem = "profile"

// principalTurn is a turn of conversation conv (of principal "ada") writing one message into the
// conversation and the fact key=value into the principal's profile.
func principalTurn(tenant, conv string, host int, key, value string) Turn {
	id := core.Identity{Tenant: tenant, Principal: "ada", ConversationID: conv}
	ns, pns := id.Namespace(), id.PrincipalNamespace()
	return Turn{Tenant: tenant, Namespace: ns, PrincipalNamespace: pns, HostTurn: host,
		MemoryIDs: []string{chatMem, profileMem}, CountMessageTurns: true, Now: t0,
		Build: func(turn int) ([]core.Entry, error) {
			fact := mkEntry(tenant, pns, profileMem, core.KindFact, "fact:"+key, 0, 0)
			fact.Value = json.RawMessage(fmt.Sprintf(`{"key":%q,"value":%q}`, key, value))
			fact.SourceTurn, fact.SourceConversation = turn, conv
			return []core.Entry{msgEntry(tenant, ns, turn, 0), fact}, nil
		}}
}

func ada(tenant, conv string) core.Identity {
	return core.Identity{Tenant: tenant, Principal: "ada", ConversationID: conv}
}

func testPrincipalWrite(t *testing.T, es turns.Store, tenant string) {
	turn, written := mustWrite(t, es, principalTurn(tenant, "march", 1, "location", "Lisbon"))
	if turn != 1 || len(written) != 2 {
		t.Fatalf("turn %d, written %v", turn, entryIDs(written))
	}
	if got := list(t, es, tenant, ada(tenant, "march").Namespace()); !slices.Equal(got, []string{"msg-1-0"}) {
		t.Errorf("conversation holds %v, want [msg-1-0]", got)
	}
	pns := ada(tenant, "").PrincipalNamespace()
	if got := list(t, es, tenant, pns); !slices.Equal(got, []string{"fact:location"}) {
		t.Errorf("principal's namespace holds %v, want [fact:location]", got)
	}
	e := mustGetEntry(t, es, tenant, pns, profileMem, "fact:location")
	if e.SourceConversation != "march" || e.SourceTurn != 1 || e.Supersedes != nil || e.Namespace != pns {
		t.Errorf("fact = %+v, want it from march's turn 1, superseding nothing", e)
	}
	n, err := es.CountWrittenFrom(t.Context(), tenant, pns, "march", t0)
	if err != nil || n != 1 {
		t.Errorf("CountWrittenFrom(march) = %d, %v; want 1", n, err)
	}
	if n, _ := es.CountWrittenFrom(t.Context(), tenant, pns, "may", t0); n != 0 {
		t.Errorf("CountWrittenFrom(may) = %d, want 0", n)
	}
}

func testPrincipalSupersedes(t *testing.T, es turns.Store, tenant string) {
	mustWrite(t, es, principalTurn(tenant, "march", 1, "location", "Lisbon"))
	mustWrite(t, es, principalTurn(tenant, "march", 1, "diet", "fish"))
	mustWrite(t, es, principalTurn(tenant, "may", 1, "location", "Porto"))
	pns := ada(tenant, "").PrincipalNamespace()
	e := mustGetEntry(t, es, tenant, pns, profileMem, "fact:location")
	if e.Version != 2 || e.SourceConversation != "may" || e.SourceTurn != 1 || !json.Valid(e.Value) {
		t.Fatalf("restated fact = %+v, want version 2 from may", e)
	}
	var v struct{ Value string }
	_ = json.Unmarshal(e.Value, &v)
	if v.Value != "Porto" {
		t.Errorf("restated fact's value %s, want Porto (the newest statement)", e.Value)
	}
	sup := e.Supersedes
	if sup == nil || sup.Conversation != "march" || sup.Turn != 1 {
		t.Fatalf("supersedes = %+v, want march's turn 1", sup)
	}
	_ = json.Unmarshal(sup.Value, &v)
	if v.Value != "Lisbon" {
		t.Errorf("supersedes value %s, want Lisbon", sup.Value)
	}
	// A fact stated once supersedes nothing.
	if d := mustGetEntry(t, es, tenant, pns, profileMem, "fact:diet"); d.Supersedes != nil {
		t.Errorf("fact:diet supersedes %+v", d.Supersedes)
	}
}

func testPrincipalTurnNumbers(t *testing.T, es turns.Store, tenant string) {
	for range 3 {
		mustWrite(t, es, principalTurn(tenant, "march", 1, "k", "v"))
	}
	// The principal's namespace holds facts from march's turn 3; may numbers from 1 all the same.
	if turn, _ := mustWrite(t, es, principalTurn(tenant, "may", 1, "k", "w")); turn != 1 {
		t.Errorf("may's first turn = %d, want 1: turn numbers are per conversation", turn)
	}
	if turn, _ := mustWrite(t, es, principalTurn(tenant, "march", 1, "k", "x")); turn != 4 {
		t.Errorf("march's fourth turn = %d, want 4", turn)
	}
}

// A conversation whose turns only a principal-scoped memory keeps (nothing in its own
// namespace) still numbers them 1, 2, 3: its turns in the principal's namespace count, and
// another conversation's there do not.
func testPrincipalOnlyTurns(t *testing.T, es turns.Store, tenant string) {
	only := func(conv string) Turn {
		id := ada(tenant, conv)
		pns := id.PrincipalNamespace()
		return Turn{Tenant: tenant, Namespace: id.Namespace(), PrincipalNamespace: pns, HostTurn: 1, Now: t0,
			MemoryIDs: []string{profileMem},
			Shared:    &turns.SharedScope{Namespace: pns, Conversation: conv, MemoryIDs: []string{profileMem}, Kinds: turns.CountedKinds(true, false)},
			Build: func(turn int) ([]core.Entry, error) {
				e := mkEntry(tenant, pns, profileMem, core.KindMessage, core.ScopedEntryID(fmt.Sprintf("msg-%d-0", turn), conv), turn, 0)
				e.SourceTurn, e.SourceConversation = turn, conv
				return []core.Entry{e}, nil
			}}
	}
	var got []int
	for range 3 {
		turn, _ := mustWrite(t, es, only("march"))
		got = append(got, turn)
	}
	for range 2 {
		turn, _ := mustWrite(t, es, only("may"))
		got = append(got, turn)
	}
	assertTurns(t, got, 1, 2, 3, 1, 2)
}

func testPrincipalFingerprints(t *testing.T, es turns.Store, tenant string) {
	pns := ada(tenant, "").PrincipalNamespace()
	vecTurn := func(conv, model string, dims int) Turn {
		w := principalTurn(tenant, conv, 1, "k", "v")
		w.Fingerprints = []core.Fingerprint{{MemoryID: profileMem, Namespace: pns, Model: model, Dims: dims}}
		return w
	}
	mustWrite(t, es, vecTurn("march", "m", 3))
	mustWrite(t, es, vecTurn("may", "m", 3))
	// Another conversation of the same principal brings vectors of another space: refused,
	// from the fingerprint march recorded in the principal's namespace.
	_, err := es.WriteTurn(t.Context(), vecTurn("june", "other", 4).Write())
	var fm *core.FingerprintMismatch
	if !errors.As(err, &fm) || fm.HaveModel != "m" || fm.HaveDims != 3 || fm.GotModel != "other" {
		t.Errorf("vectors of another space from june = %v, want a mismatch with m@3", err)
	}
	// Another principal's space is their own.
	other := principalTurn(tenant, "june", 1, "k", "v")
	other.PrincipalNamespace = core.Identity{Tenant: tenant, Principal: "grace"}.PrincipalNamespace()
	other.Fingerprints = []core.Fingerprint{{MemoryID: profileMem, Namespace: other.PrincipalNamespace, Model: "other", Dims: 4}}
	if _, err := es.WriteTurn(t.Context(), other.Write()); err != nil {
		t.Errorf("grace's first vectors: %v", err)
	}
}

func testPrincipalConcurrent(t *testing.T, es turns.Store, tenant string) {
	const writers = 12
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			_, errs[i] = es.WriteTurn(t.Context(), principalTurn(tenant, fmt.Sprintf("c%d", i), 1, "location", fmt.Sprintf("city-%d", i)).Write())
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("writer %d: %v", i, err)
		}
	}
	pns := ada(tenant, "").PrincipalNamespace()
	e := mustGetEntry(t, es, tenant, pns, profileMem, "fact:location")
	if e.Version != writers {
		t.Errorf("fact version %d, want %d: every statement replaced the one before, none lost", e.Version, writers)
	}
	var v struct{ Value string }
	_ = json.Unmarshal(e.Value, &v)
	if v.Value != "city-"+e.SourceConversation[1:] {
		t.Errorf("the fact %s does not come from its own conversation %s", e.Value, e.SourceConversation)
	}
	if e.Supersedes == nil || e.Supersedes.Conversation == e.SourceConversation {
		t.Errorf("supersedes %+v: the statement replaced comes from another conversation", e.Supersedes)
	}
	for i := range writers {
		if got := list(t, es, tenant, ada(tenant, fmt.Sprintf("c%d", i)).Namespace()); !slices.Equal(got, []string{"msg-1-0"}) {
			t.Errorf("c%d holds %v, want its one turn", i, got)
		}
	}
}

func testForgetPrincipalStore(t *testing.T, es turns.Store, tenant string) {
	mustWrite(t, es, principalTurn(tenant, "a", 1, "k1", "v"))
	mustWrite(t, es, principalTurn(tenant, "a", 1, "k2", "v"))
	mustWrite(t, es, principalTurn(tenant, "b", 1, "k3", "v"))
	// Grace's data, and a conversation without a principal, must survive.
	grace := principalTurn(tenant, "g", 1, "k", "v")
	gid := core.Identity{Tenant: tenant, Principal: "grace", ConversationID: "g"}
	grace.Namespace, grace.PrincipalNamespace = gid.Namespace(), gid.PrincipalNamespace()
	grace.Build = func(turn int) ([]core.Entry, error) {
		return []core.Entry{msgEntry(tenant, gid.Namespace(), turn, 0)}, nil
	}
	mustWrite(t, es, grace)
	mustWrite(t, es, snapWrite(tenant, "anonymous", 1, t0))

	id := ada(tenant, "")
	rep, err := es.ForgetPrincipal(t.Context(), tenant, "ada", id.PrincipalNamespace(), id.ConversationsPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Conversations != 2 || rep.ConversationEntries != 3 || rep.PrincipalEntries != 3 {
		t.Errorf("ForgetPrincipal = %+v, want 2 conversations with 3 entries, 3 principal entries", rep)
	}
	for _, ns := range []string{ada(tenant, "a").Namespace(), ada(tenant, "b").Namespace(), id.PrincipalNamespace()} {
		if got := list(t, es, tenant, ns); len(got) != 0 {
			t.Errorf("%s after the forget: %v", ns, got)
		}
	}
	if got := list(t, es, tenant, gid.Namespace()); len(got) != 1 {
		t.Errorf("grace's conversation after ada's forget: %v", got)
	}
	if got := list(t, es, tenant, "anonymous"); len(got) != 1 {
		t.Errorf("a conversation of no principal after ada's forget: %v", got)
	}
	again, err := es.ForgetPrincipal(t.Context(), tenant, "ada", id.PrincipalNamespace(), id.ConversationsPrefix())
	if err != nil || again != (turns.ForgetReport{}) {
		t.Errorf("forgetting again = %+v, %v; want nothing", again, err)
	}
	// After a forget, the conversation numbers from 1 again.
	if turn, _ := mustWrite(t, es, principalTurn(tenant, "a", 1, "k1", "v")); turn != 1 {
		t.Errorf("after the forget, a's turn = %d, want 1", turn)
	}
}
