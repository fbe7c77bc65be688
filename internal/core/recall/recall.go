package recall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// maxRecallEntries bounds how many entries a non-ranking read side loads.
const maxRecallEntries = 1000

func newRecallID() string { return core.NewID("rcl_", 15) }

// QueryHash is how a query is remembered: never its text.
func QueryHash(query string) string {
	sum := sha256.Sum256([]byte(query))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Recall runs the read side of every readable memory of the tenant (or of
// those named) for one conversation, and stores a receipt of what was
// offered, with the evidence (the query's hash, never its text).
func (s *Service) Recall(ctx context.Context, p RecallParams) (RecallResult, error) {
	res, saved, err := s.RecallAsync(ctx, p)
	if err != nil {
		return RecallResult{}, err
	}
	if err := saved(); err != nil {
		return RecallResult{}, err
	}
	return res, nil
}

// RecallAsync is Recall with the receipt's write still in flight, so that the
// caller can prepare its answer meanwhile: saved waits for the write and
// returns its error. The caller must call saved, and have it succeed, before
// anyone learns the recallId, and must not modify the result until saved has
// returned (the receipt is encoded from it concurrently).
func (s *Service) RecallAsync(ctx context.Context, p RecallParams) (RecallResult, func() error, error) {
	res, err := s.recall(ctx, p)
	if err != nil {
		return RecallResult{}, nil, err
	}
	done := make(chan error, 1)
	go func() {
		err := s.store.SaveRecall(ctx, p.Identity.Tenant, res)
		s.obs.ReceiptSaved(err)
		done <- err
	}()
	return res, func() error { return <-done }, nil
}

// recall computes a recall and its evidence; it stores nothing.
func (s *Service) recall(ctx context.Context, p RecallParams) (RecallResult, error) {
	query := p.Query
	if query == "" {
		for i := len(p.Messages) - 1; i >= 0; i-- {
			if p.Messages[i].Role == "user" && strings.TrimSpace(p.Messages[i].Content) != "" {
				query = p.Messages[i].Content
				break
			}
		}
	}
	if strings.TrimSpace(query) == "" {
		return RecallResult{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "recall", Path: "query",
			Detail: "recall needs a query: send `query`, or `messages` with a user message that has content.", Fix: "Where is my order?"}
	}
	if reason := core.CheckText(query); reason != "" {
		return RecallResult{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "recall", Path: "query", Detail: "the query " + reason + "."}
	}
	if p.ContextTokensRemaining != nil && *p.ContextTokensRemaining < 0 {
		return RecallResult{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "recall", Path: "contextTokensRemaining", Detail: "`contextTokensRemaining` cannot be negative.", Fix: 4000}
	}
	all, err := s.defs.Memories(ctx, p.Identity.Tenant)
	if err != nil {
		return RecallResult{}, err
	}
	chosen, err := pick(all, p.Memories)
	if err != nil {
		return RecallResult{}, err
	}
	now := s.now().UTC().Truncate(time.Millisecond)
	qhash := QueryHash(query)
	vectors := map[string][]float32{}
	embedQuery := func(id string) ([]float32, core.EmbedderInfo, error) {
		emb, ok := s.embedders[id]
		if !ok {
			return nil, core.EmbedderInfo{}, &core.ValidationError{Code: core.CodeMissingRequirement, Site: "recall", Path: "memories",
				Detail: fmt.Sprintf("a memory of this recall needs the embedder %q, which this server no longer has; configure it again, or leave the memory out with `memories`.", id)}
		}
		if v, ok := vectors[id]; ok {
			return v, emb.Info(), nil
		}
		if !core.HasWords(query) {
			return nil, emb.Info(), nil
		}
		vs, err := emb.Embed(ctx, []string{query})
		if err != nil {
			return nil, emb.Info(), fmt.Errorf("embed query with %q: %w", id, err)
		}
		vectors[id] = vs[0]
		return vs[0], emb.Info(), nil
	}

	result := RecallResult{
		RecallID: newRecallID(), Identity: p.Identity, QueryHash: qhash, Turn: p.Turn, RunID: p.RunID,
		CreatedAt: now, Memories: []MemoryRecall{}, Injections: []Injection{},
	}
	named := map[string]bool{}
	for _, id := range p.Memories {
		named[id] = true
	}
	// A rerun of turn N sees the conversation as the recall made for turn N did: only what
	// turns before N wrote. (Any recall for turn N made before turn N was posted sees the
	// same, so the rule is applied to reruns only: a host with a stale turn counter keeps
	// seeing everything on ordinary recalls.)
	var horizon asOf
	if p.IsRerun() {
		result.Rerun, result.Exclude = true, slices.Clone(p.Exclude)
		horizon = asOf{turn: p.Turn, conversation: p.Identity.ConversationID}
	}
	for _, m := range chosen {
		ctx, read := s.startRead(ctx, m, query) // telemetry.go: this memory's retrieval span and its clock
		in := ReadInput{Memory: m, QueryHash: qhash, ContextTokensRemaining: p.ContextTokensRemaining, Now: now}
		if m.PrincipalScoped() && p.Identity.Principal == "" {
			// A principal-scoped memory knows users; a recall that names none reads nothing
			// from it, and says so.
			detail := fmt.Sprintf("memory %q is principal-scoped (it keeps entries per end user, across their conversations) and this recall names no principal, so there is nobody's memory to read. Send the recall with ?principal=<user id>.", m.ID)
			if named[m.ID] {
				return RecallResult{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "recall", Path: "principal", Detail: detail, Fix: "user-42"}
			}
			rec := ReadMemory(in)
			rec.Evidence.Note = detail
			result.Memories = append(result.Memories, rec)
			continue
		}
		namespace := p.Identity.NamespaceFor(m)
		kinds := strategyKinds(m.Strategy)
		if kinds.others {
			entries, next, err := s.store.ListEntries(ctx, core.EntryQuery{Tenant: p.Identity.Tenant, Namespace: namespace,
				MemoryID: m.ID, Limit: maxRecallEntries, Now: now})
			if err != nil {
				return RecallResult{}, read.fail(err)
			}
			in.Entries, in.EntriesTruncated = entries, next != ""
		}
		var later []string // a rerun's candidates written by its turn or later
		if len(kinds.topKs) > 0 {
			rankings, laterRanked, err := s.rankParts(ctx, p.Identity.Tenant, namespace, m, kinds.topKs, now, query, horizon, embedQuery)
			if err != nil {
				return RecallResult{}, read.fail(err)
			}
			in.Rankings, later = rankings, laterRanked
		}
		if horizon.turn > 0 {
			in.Entries, later = writtenBefore(in.Entries, horizon, later)
		}
		var fold *FoldEvidence
		if sum, ok := m.Strategy.Find(core.Summarize); ok {
			in.Entries, fold = s.fold(ctx, m, sum, in.Entries, now)
		}
		excluded := excludedFor(m.ID, p.Exclude)
		var dropped []string
		if len(excluded) > 0 {
			in.Entries, dropped = withoutExcluded(in.Entries, excluded, dropped)
			for _, pr := range in.Rankings {
				dropped = withoutExcludedRanked(pr.Ranked, excluded, dropped)
			}
		}
		rec := ReadMemory(in)
		if fold != nil {
			rec.Evidence.Fold = fold
			for i := range rec.Evidence.Parts {
				if rec.Evidence.Parts[i].Strategy == core.Summarize {
					rec.Evidence.Parts[i].Fold = fold
				}
			}
		}
		if len(excluded) > 0 {
			rec.Evidence.Excluded = sortedKeys(excluded)
			for _, id := range dropped {
				rec.Evidence.Candidates = append(rec.Evidence.Candidates, Candidate{ID: id, MemoryID: m.ID,
					Rank: len(rec.Evidence.Candidates) + 1, Reason: ReasonExcluded})
				rec.Evidence.RejectedCount++
				rec.Evidence.ConsideredCount++
			}
		}
		if horizon.turn > 0 {
			rec.Evidence.BeforeTurn = horizon.turn
			for _, id := range later {
				rec.Evidence.Candidates = append(rec.Evidence.Candidates, Candidate{ID: id, MemoryID: m.ID,
					Rank: len(rec.Evidence.Candidates) + 1, Reason: ReasonLaterTurn})
				rec.Evidence.RejectedCount++
				rec.Evidence.ConsideredCount++
			}
		}
		read.end(rec)
		result.Memories = append(result.Memories, rec)
	}
	result.SystemPrompt, result.Injections = Assemble(result.Memories)
	return result, nil
}

// GetRecall reads a stored receipt back.
func (s *Service) GetRecall(ctx context.Context, tenant, id string) (RecallResult, error) {
	return s.store.GetRecall(ctx, tenant, id)
}

// pick returns the named memories (all when none are named), in id order;
// a named memory that does not exist is ErrNotFound.
func pick(all []core.Memory, named []string) ([]core.Memory, error) {
	if len(named) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range named {
		want[id] = true
	}
	var out []core.Memory
	for _, m := range all {
		if want[m.ID] {
			out = append(out, m)
			delete(want, m.ID)
		}
	}
	for _, id := range named {
		if want[id] {
			return nil, &core.NotFoundError{What: "memory", ID: id}
		}
	}
	return out, nil
}

// kindSet says which read paths a strategy needs: ranking (its topK parts,
// in the order the strategy lists them, a hybrid's depth first, as the
// reader meets them) and/or the memory's entries.
type kindSet struct {
	topKs  []core.Strategy
	others bool
}

func strategyKinds(s core.Strategy) kindSet {
	var ks kindSet
	var walk func(core.Strategy)
	walk = func(x core.Strategy) {
		switch x.Kind {
		case core.TopK:
			ks.topKs = append(ks.topKs, x)
		case core.Hybrid:
		default:
			ks.others = true
		}
		for _, p := range x.Parts {
			walk(p)
		}
	}
	walk(s)
	return ks
}

// rankParts ranks the memory's entries for each of its topK parts. Parts that rank alike (the
// same embedder, ranking and alpha) share one store ranking, as long as the longest of them
// asks for (k + rejectWindow); each part gets it cut to its own length.
//
// With a horizon (a rerun), entries written by its turn or later are dropped from a
// ranking before the parts cut it (rankedBefore, their ids returned as later), and the store
// is asked for more until the longest part has its length of earlier entries or the memory
// has no more.
func (s *Service) rankParts(ctx context.Context, tenant, namespace string, m core.Memory, parts []core.Strategy, now time.Time,
	query string, horizon asOf, embedQuery func(string) ([]float32, core.EmbedderInfo, error)) (_ []PartRanking, later []string, _ error) {
	type rankKey struct {
		embedder string
		ranking  core.Ranking
		alpha    float64
	}
	out := make([]PartRanking, len(parts))
	keys := make([]rankKey, len(parts))
	longest := map[rankKey]int{}
	for i, part := range parts {
		set := strategies.ResolveTopK(part, m, s.caps)
		out[i].Settings = set
		out[i].EmbedderID = set.Embedder
		keys[i] = rankKey{set.Embedder, set.Ranking, set.Alpha}
		if set.Ranking != core.RankHybrid {
			keys[i].alpha = 0
		}
		longest[keys[i]] = max(longest[keys[i]], set.K+set.RejectWindow)
	}
	var terms []string
	shared := map[rankKey]PartRanking{}
	for i := range out {
		key := keys[i]
		pr, ok := shared[key]
		if !ok {
			vec, info, err := embedQuery(key.embedder)
			if err != nil {
				return nil, nil, err
			}
			pr = PartRanking{EmbedderID: key.embedder, Dimensions: info.Dimensions, Unembeddable: vec == nil}
			if vec != nil {
				pr.Dimensions = len(vec)
				if terms == nil && UsesLexical(key.ranking) {
					terms = core.QueryTerms(query)
				}
				rq := RankQuery{Tenant: tenant, Namespace: namespace, MemoryID: m.ID, Kinds: rankKinds(m), Vector: vec,
					Model: info.Model, Ranking: key.ranking, Alpha: key.alpha, Limit: longest[key], Now: now}
				if UsesLexical(key.ranking) {
					rq.Terms = terms
				}
				rk, err := s.store.RankEntries(ctx, rq)
				for horizon.turn > 0 && err == nil && len(rk.Ranked) == rq.Limit && rq.Limit < longest[key]+maxRecallEntries &&
					earlierCount(rk.Ranked, horizon) < longest[key] {
					rq.Limit = min(2*rq.Limit, longest[key]+maxRecallEntries)
					rk, err = s.store.RankEntries(ctx, rq)
				}
				if err != nil {
					return nil, nil, err
				}
				if horizon.turn > 0 {
					later = rankedBefore(&rk, horizon, later)
				}
				pr.Ranked = &rk
			}
			shared[key] = pr
		}
		set := out[i].Settings
		out[i] = pr
		out[i].Settings = set
		if pr.Ranked != nil {
			rk := *pr.Ranked
			rk.Ranked = rk.Ranked[:min(len(rk.Ranked), max(set.K+set.RejectWindow, 0))]
			out[i].Ranked = &rk
		}
	}
	return out, later, nil
}

// asOf is a rerun's horizon: what turn `turn` of `conversation` could have seen.
type asOf struct {
	turn         int
	conversation string
}

// later reports whether e was written by the horizon's turn or a later one of its
// conversation. Entries no turn wrote (document chunks) are never later, and neither are a
// principal-scoped memory's entries from the principal's other conversations, whose turns are
// not this conversation's (nothing orders them against it).
func (h asOf) later(e core.Entry) bool {
	return h.turn > 0 && e.SourceTurn >= h.turn && (e.SourceConversation == "" || e.SourceConversation == h.conversation)
}

// writtenBefore keeps the entries the horizon's turn could have seen, adding the ids of the
// others to later.
func writtenBefore(entries []core.Entry, h asOf, later []string) ([]core.Entry, []string) {
	kept := entries[:0:0]
	for _, e := range entries {
		if h.later(e) {
			later = appendUnique(later, e.ID)
			continue
		}
		kept = append(kept, e)
	}
	return kept, later
}

// rankedBefore drops the entries the horizon's turn could not have seen from a ranking (and
// from its count), adding their ids to later.
func rankedBefore(rk *RankResult, h asOf, later []string) []string {
	return dropRanked(rk, h.later, later)
}

// earlierCount counts the ranked entries the horizon's turn could have seen.
func earlierCount(ranked []Scored, h asOf) int {
	n := 0
	for _, sc := range ranked {
		if !h.later(sc.Entry) {
			n++
		}
	}
	return n
}

// withoutExcludedRanked drops excluded entries from a ranking (and from its count), adding
// their ids to dropped.
func withoutExcludedRanked(rk *RankResult, excluded map[string]bool, dropped []string) []string {
	return dropRanked(rk, func(e core.Entry) bool { return excluded[e.ID] }, dropped)
}

// dropRanked drops the entries drop says to from a ranking (and from its count), adding their
// ids to dropped.
func dropRanked(rk *RankResult, drop func(core.Entry) bool, dropped []string) []string {
	if rk == nil {
		return dropped
	}
	kept := rk.Ranked[:0:0]
	for _, sc := range rk.Ranked {
		if drop(sc.Entry) {
			dropped = appendUnique(dropped, sc.Entry.ID)
			continue
		}
		kept = append(kept, sc)
	}
	if rk.Total > 0 {
		rk.Total -= len(rk.Ranked) - len(kept)
	}
	rk.Ranked = kept
	return dropped
}

// rankKinds are the entry kinds a memory's topK ranks.
func rankKinds(m core.Memory) []core.EntryKind {
	switch {
	case m.Type == core.Causal:
		return []core.EntryKind{core.KindSnapshot}
	case m.Corpus:
		return []core.EntryKind{core.KindDocument}
	default:
		return []core.EntryKind{core.KindMessage}
	}
}

// excludedFor returns the entry ids excluded for one memory.
func excludedFor(memoryID string, exclude []string) map[string]bool {
	out := map[string]bool{}
	prefix := "memory:" + memoryID + "#"
	for _, x := range exclude {
		if strings.HasPrefix(x, prefix) {
			out[strings.TrimPrefix(x, prefix)] = true
		}
	}
	return out
}

func withoutExcluded(entries []core.Entry, excluded map[string]bool, dropped []string) ([]core.Entry, []string) {
	kept := entries[:0:0]
	for _, e := range entries {
		if excluded[e.ID] {
			dropped = appendUnique(dropped, e.ID)
			continue
		}
		kept = append(kept, e)
	}
	return kept, dropped
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func appendUnique(xs []string, x string) []string {
	if x == "" || slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}
