package server_test

import (
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/footprint/footprint/internal/app"
	"github.com/footprint/footprint/internal/store/memory"
	"github.com/footprint/footprint/internal/store/pg/pgtest"
)

// isoIdentity is one caller: a tenant (by its key) and a principal in it.
type isoIdentity struct {
	tenant, key, principal string
}

func (id isoIdentity) String() string { return id.tenant + "/" + id.principal }

// marker is unique text naming who wrote it: zq<tenant><principal>n<seq>.
// Tenant-wide data (documents, run events) uses the principal "all".
var markerRE = regexp.MustCompile(`zq(acme|globex)(p1|p2|all)n\d+`)

// isoModel is what each identity (and tenant) has created.
type isoModel struct {
	seq      int
	memories map[string][]string            // tenant → memory ids it created
	turns    map[string]map[string][]string // identity → conversation → user contents, in turn order
	keys     map[string][]struct {
		conv, body string
		turn       int
	} // tenant → idempotency keys used (index = key number)
	recalls map[string][]string // tenant → recall ids
	runs    map[string][]string // tenant → run ids
	runAt   map[string]bool     // identity|conversation|turn a run was opened for
	// owner is the principal a recall receipt or a run was made for, by tenant|id: forgetting
	// the principal erases them.
	owner map[string]string
}

// TestTenantIsolationProperty runs random sequences of operations by two
// tenants and two principals in each, and after every operation checks that
// no identity observes another's data: not in lists, not in recall, recall
// receipts, run events or explanations, not through guessed ids, cursors or
// Idempotency-Keys. Recall receipts and runs are tenant-scoped by the spec,
// so within a tenant they are checked per tenant; entries, recall content and
// explanations per principal.
func TestTenantIsolationProperty(t *testing.T) {
	stores := []struct {
		name string
		open func(t *testing.T) app.Store
	}{
		{"memory", func(*testing.T) app.Store { return memory.New() }},
		{"postgres", func(t *testing.T) app.Store { return pgtest.Open(t) }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			e := setup(t, withKeys, func(o *options) { o.store = s.open(t) })
			seed := uint64(time.Now().UnixNano())
			if v, err := strconv.ParseUint(os.Getenv("ISOLATION_SEED"), 10, 64); err == nil {
				seed = v
			}
			t.Logf("seed %d (rerun with ISOLATION_SEED=%d)", seed, seed)
			isolationProperty(t, e, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), 200)
		})
	}
}

func isolationProperty(t *testing.T, e *env, rng *rand.Rand, steps int) {
	ids := []isoIdentity{
		{"acme", keyAcme, "p1"}, {"acme", keyAcme, "p2"},
		{"globex", keyGlobex, "p1"}, {"globex", keyGlobex, "p2"},
	}
	other := map[string]string{"acme": "globex", "globex": "acme"}
	key := map[string]string{"acme": keyAcme, "globex": keyGlobex}
	convs := []string{"c0", "c1", "c2"}
	m := &isoModel{
		memories: map[string][]string{}, turns: map[string]map[string][]string{},
		keys: map[string][]struct {
			conv, body string
			turn       int
		}{}, recalls: map[string][]string{}, runs: map[string][]string{},
		runAt: map[string]bool{}, owner: map[string]string{},
	}
	for _, id := range ids {
		m.turns[id.String()] = map[string][]string{}
	}
	must := func(r response, want int, what string) map[string]any {
		t.Helper()
		if r.status != want {
			t.Fatalf("%s: %d, want %d: %s", what, r.status, want, r.body)
		}
		if len(r.body) == 0 || r.body[0] != '{' {
			return nil
		}
		return r.json(t)
	}
	// clean fails when body holds a marker the caller may not see: another
	// tenant's always; another principal's when principalScoped.
	clean := func(id isoIdentity, principalScoped bool, what string, body []byte) {
		t.Helper()
		for _, mm := range markerRE.FindAllSubmatch(body, -1) {
			tenant, principal := string(mm[1]), string(mm[2])
			if tenant != id.tenant || principalScoped && principal != "all" && principal != id.principal {
				t.Fatalf("%s as %s sees %s", what, id, mm[0])
			}
		}
	}
	next := func(tenant, principal string) string {
		m.seq++
		return fmt.Sprintf("zq%s%sn%d", tenant, principal, m.seq)
	}
	// Both tenants use the same memory ids, with different shapes.
	for _, tenant := range []string{"acme", "globex"} {
		size := map[string]int{"acme": 7, "globex": 9}[tenant]
		for _, body := range []string{
			fmt.Sprintf(`{"id":"chat","type":"episodic","strategy":{"kind":"window","size":%d}}`, size),
			`{"id":"why","type":"causal","strategy":{"kind":"topK","topK":5}}`,
			`{"id":"docs","type":"semantic","corpus":true,"strategy":{"kind":"topK","topK":3}}`,
			// What every conversation of a principal said, ranked in any of them.
			`{"id":"profile","type":"semantic","scope":"principal","strategy":{"kind":"topK","topK":20,"threshold":-1}}`,
		} {
			must(e.do("POST", "/v1/memories", key[tenant], body), 201, "define "+body)
		}
		m.memories[tenant] = []string{"chat", "docs", "profile", "why"}
	}

	q := func(id isoIdentity) string { return "principal=" + id.principal }
	pick := func(xs []string) string {
		if len(xs) == 0 {
			return ""
		}
		return xs[rng.IntN(len(xs))]
	}
	// foreignOnly: ids the other tenant has that this one does not.
	foreignOnly := func(mine, theirs []string) []string {
		var out []string
		for _, x := range theirs {
			if !slices.Contains(mine, x) {
				out = append(out, x)
			}
		}
		return out
	}

	// observe checks what one identity can see after every step.
	observe := func(id isoIdentity) {
		t.Helper()
		// Memories: exactly the tenant's own.
		r := must(e.do("GET", "/v1/memories?limit=200", id.key, ""), 200, "list memories")
		var got []string
		for _, x := range r["memories"].([]any) {
			got = append(got, x.(map[string]any)["id"].(string))
		}
		want := slices.Clone(m.memories[id.tenant])
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s lists memories %v, created %v", id, got, want)
		}
		// Runs: exactly the tenant's own.
		rr := e.do("GET", "/v1/runs?limit=200", id.key, "")
		clean(id, false, "list runs", rr.body)
		got = nil
		for _, x := range must(rr, 200, "list runs")["runs"].([]any) {
			got = append(got, x.(map[string]any)["runId"].(string))
		}
		want = slices.Clone(m.runs[id.tenant])
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Fatalf("%s lists runs %v, opened %v", id, got, want)
		}
		// Entries of one conversation: exactly this identity's turns.
		conv := pick(convs)
		er := e.do("GET", "/v1/conversations/"+conv+"/entries?memory=chat&limit=200&"+q(id), id.key, "")
		clean(id, true, "entries of "+conv, er.body)
		var users []string
		for _, x := range must(er, 200, "entries")["entries"].([]any) {
			v, _ := x.(map[string]any)["value"].(map[string]any)
			if v["role"] == "user" {
				users = append(users, v["content"].(string))
			}
		}
		slices.Reverse(users) // newest first → turn order
		if own := m.turns[id.String()][conv]; !slices.Equal(users, own) {
			t.Fatalf("%s sees in %s user messages %q, wrote %q", id, conv, users, own)
		}
		// What is known about the principal: exactly the user messages of all their
		// conversations, and nothing of another principal's or tenant's.
		pr := e.do("GET", "/v1/principals/"+id.principal+"/entries?memory=profile&kind=msg&limit=200", id.key, "")
		clean(id, true, "principal entries", pr.body)
		var known []string
		for _, x := range must(pr, 200, "principal entries")["entries"].([]any) {
			v, _ := x.(map[string]any)["value"].(map[string]any)
			if v["role"] == "user" {
				known = append(known, v["content"].(string))
			}
		}
		var said []string
		for _, c := range convs {
			said = append(said, m.turns[id.String()][c]...)
		}
		sort.Strings(known)
		sort.Strings(said)
		if !slices.Equal(known, said) {
			t.Fatalf("%s: the principal's entries hold %q, the principal said %q", id, known, said)
		}
	}

	counts := map[string]int{}
	for step := range steps {
		id := ids[rng.IntN(len(ids))]
		conv := pick(convs)
		opName := ""
		switch k := rng.IntN(13); k {
		case 0: // a memory, with an id the other tenant may use too
			opName = "createMemory"
			mid := fmt.Sprintf("m%d", rng.IntN(6))
			r := e.do("POST", "/v1/memories", id.key, `{"id":"`+mid+`","type":"episodic","strategy":{"kind":"window"}}`)
			if slices.Contains(m.memories[id.tenant], mid) {
				must(r, 409, "re-create "+mid)
			} else {
				must(r, 201, "create "+mid)
				m.memories[id.tenant] = append(m.memories[id.tenant], mid)
			}
		case 1, 2, 3: // a turn, with an Idempotency-Key numbered per tenant (so both tenants use "k-3")
			opName = "postTurn"
			mk := next(id.tenant, id.principal)
			link := ""
			if rid := pick(append(slices.Clone(m.recalls["acme"]), m.recalls["globex"]...)); rid != "" && rng.IntN(2) == 0 {
				link = `,"recallIds":["` + rid + `"]`
			}
			if run := pick(append(slices.Clone(m.runs["acme"]), m.runs["globex"]...)); run != "" && rng.IntN(2) == 0 {
				link += `,"runId":"` + run + `"`
			}
			body := `{"messages":[{"role":"user","content":"` + mk + ` asks where order A-7 is"},{"role":"assistant","content":"` + mk + ` it ships"}]` + link + `}`
			n := len(m.keys[id.tenant])
			idem := fmt.Sprintf("k-%d", n)
			path := "/v1/conversations/" + conv + "/turns?" + q(id)
			r := e.do("POST", path, id.key, body, "Idempotency-Key", idem)
			if r.header.Get("Idempotent-Replayed") != "" {
				t.Fatalf("%s: key %s (used by the other tenant: %v) replayed: %s", id, idem, len(m.keys[other[id.tenant]]) > n, r.body)
			}
			turn := int(must(r, 201, "post turn")["turn"].(float64))
			own := m.turns[id.String()]
			own[conv] = append(own[conv], mk+" asks where order A-7 is")
			if turn != len(own[conv]) {
				t.Fatalf("%s: turn %d in %s, want %d (another identity's turns counted?)", id, turn, conv, len(own[conv]))
			}
			m.keys[id.tenant] = append(m.keys[id.tenant], struct {
				conv, body string
				turn       int
			}{path, body, turn})
		case 4: // replay an own key: same answer; the other tenant's same key number is its own
			opName = "replayKey"
			ks := m.keys[id.tenant]
			if len(ks) == 0 {
				continue
			}
			i := rng.IntN(len(ks))
			r := e.do("POST", ks[i].conv, id.key, ks[i].body, "Idempotency-Key", fmt.Sprintf("k-%d", i))
			if r.header.Get("Idempotent-Replayed") != "true" || int(must(r, 201, "replay")["turn"].(float64)) != ks[i].turn {
				t.Fatalf("%s: replay of k-%d: %d %s", id, i, r.status, r.body)
			}
		case 5: // recall
			opName = "recall"
			r := e.do("POST", "/v1/conversations/"+conv+"/recall?"+q(id), id.key, `{"query":"where is order A-7","contextTokensRemaining":4000}`)
			clean(id, true, "recall", r.body)
			b := must(r, 200, "recall")
			if rid, _ := b["recallId"].(string); rid != "" {
				m.recalls[id.tenant] = append(m.recalls[id.tenant], rid)
				m.owner[id.tenant+"|"+rid] = id.principal
			}
		case 6: // recall receipts: own readable (tenant-scoped), the other tenant's 404
			opName = "getRecall"
			if rid := pick(m.recalls[id.tenant]); rid != "" {
				r := e.do("GET", "/v1/recalls/"+rid, id.key, "")
				must(r, 200, "own receipt")
				clean(id, false, "receipt", r.body)
			}
			if rid := pick(m.recalls[other[id.tenant]]); rid != "" {
				must(e.do("GET", "/v1/recalls/"+rid, id.key, ""), 404, "the other tenant's receipt "+rid)
			}
		case 7: // runs: ids collide across tenants on purpose
			opName = "runs"
			run := fmt.Sprintf("r%d", rng.IntN(5))
			if !slices.Contains(m.runs[id.tenant], run) {
				// Opened for the identity's next turn in conv, as an agent would.
				turn := len(m.turns[id.String()][conv]) + 1
				must(e.do("POST", "/v1/runs", id.key, fmt.Sprintf(`{"runId":"%s","conversationId":"%s","principal":"%s","turn":%d}`, run, conv, id.principal, turn)), 201, "open "+run)
				m.runAt[fmt.Sprintf("%s|%s|%d", id, conv, turn)] = true
				m.runs[id.tenant] = append(m.runs[id.tenant], run)
				m.owner[id.tenant+"|"+run] = id.principal
			}
			mk := next(id.tenant, "all")
			must(e.do("POST", "/v1/runs/"+run+"/events", id.key, `{"events":[{"type":"llm.request","payload":{"note":"`+mk+`"}}]}`), 200, "append")
			r := e.do("GET", "/v1/runs/"+run+"/events", id.key, "")
			must(r, 200, "events")
			clean(id, false, "run events", r.body)
			for _, guess := range foreignOnly(m.runs[id.tenant], m.runs[other[id.tenant]]) {
				must(e.do("GET", "/v1/runs/"+guess, id.key, ""), 404, "the other tenant's run "+guess)
				must(e.do("GET", "/v1/runs/"+guess+"/events", id.key, ""), 404, "the other tenant's run events "+guess)
			}
		case 8: // explain own turns; a turn only others have is 404
			opName = "explain"
			own := len(m.turns[id.String()][conv])
			if own > 0 {
				turn := 1 + rng.IntN(own)
				r := e.do("GET", fmt.Sprintf("/v1/conversations/%s/turns/%d/explain?depth=2&%s", conv, turn, q(id)), id.key, "")
				must(r, 200, "explain")
				clean(id, true, "explain", r.body)
			}
			most := 0
			for _, o := range ids {
				most = max(most, len(m.turns[o.String()][conv]))
			}
			if most > own && !m.runAt[fmt.Sprintf("%s|%s|%d", id, conv, own+1)] {
				must(e.do("GET", fmt.Sprintf("/v1/conversations/%s/turns/%d/explain?%s", conv, own+1, q(id)), id.key, ""), 404, "explain a turn only another identity has")
			}
		case 9: // documents into the tenant's corpus
			opName = "documents"
			mk := next(id.tenant, "all")
			must(e.do("POST", "/v1/memories/docs/documents", id.key, `{"documents":[{"id":"d`+fmt.Sprint(rng.IntN(4))+`","text":"`+mk+` order A-7 ships in two days"}]}`), 200, "index")
		case 10: // cursors do not cross tenants
			opName = "cursor"
			r := must(e.do("GET", "/v1/memories?limit=1", id.key, ""), 200, "page")
			if c, _ := r["nextCursor"].(string); c != "" {
				bad := e.do("GET", "/v1/memories?limit=1&cursor="+url.QueryEscape(c), key[other[id.tenant]], "")
				if bad.status != 400 || bad.json(t)["code"] != "invalid-cursor" {
					t.Fatalf("%s's memory cursor used by %s: %d %s", id, other[id.tenant], bad.status, bad.body)
				}
			}
			if len(m.turns[id.String()][conv]) > 0 {
				r := must(e.do("GET", "/v1/conversations/"+conv+"/entries?limit=1&"+q(id), id.key, ""), 200, "entries page")
				if c, _ := r["nextCursor"].(string); c != "" {
					bad := e.do("GET", "/v1/conversations/"+conv+"/entries?limit=1&"+q(id)+"&cursor="+url.QueryEscape(c), key[other[id.tenant]], "")
					clean(isoIdentity{other[id.tenant], "", "-"}, false, "foreign entries cursor", bad.body)
					if bad.status != 400 {
						t.Fatalf("%s's entries cursor used by %s: %d %s", id, other[id.tenant], bad.status, bad.body)
					}
				}
			}
		case 12: // forget a principal everywhere: theirs goes, nobody else's
			opName = "forgetPrincipal"
			if rng.IntN(3) != 0 {
				continue // rarely, so that data accumulates
			}
			must(e.do("DELETE", "/v1/principals/"+id.principal, id.key, ""), 200, "forget principal")
			m.turns[id.String()] = map[string][]string{}
			gone := func(xs []string) []string {
				return slices.DeleteFunc(xs, func(x string) bool { return m.owner[id.tenant+"|"+x] == id.principal })
			}
			m.recalls[id.tenant] = gone(m.recalls[id.tenant])
			m.runs[id.tenant] = gone(m.runs[id.tenant])
			for k := range m.runAt {
				if strings.HasPrefix(k, id.String()+"|") {
					delete(m.runAt, k)
				}
			}
		case 11: // guessed ids: the other tenant's memories and entries
			opName = "guess"
			for _, mid := range foreignOnly(m.memories[id.tenant], m.memories[other[id.tenant]]) {
				must(e.do("GET", "/v1/memories/"+mid, id.key, ""), 404, "the other tenant's memory "+mid)
			}
			mine := len(m.turns[id.String()][conv])
			for _, o := range ids {
				if n := len(m.turns[o.String()][conv]); o != id && n > mine {
					r := e.do("GET", fmt.Sprintf("/v1/conversations/%s/entries/msg-%d-0?memory=chat&%s", conv, n, q(id)), id.key, "")
					clean(id, true, "guessed entry", r.body)
					must(r, 404, fmt.Sprintf("%s guessing %s's entry msg-%d-0", id, o, n))
				}
			}
		}
		counts[opName]++
		for _, o := range ids {
			observe(o)
		}
		if t.Failed() {
			t.Fatalf("after step %d (%s by %s)", step, opName, id)
		}
	}
	t.Logf("operations: %v", counts)
}
