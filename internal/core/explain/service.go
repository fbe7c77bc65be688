package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
)

// Deps is what a Service needs.
type Deps struct {
	Store Store
	Caps  core.Capabilities
	// Embedders by id, for the semantic-alignment influence proxy.
	Embedders map[string]core.Embedder
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// KeyTTL is how long an Idempotency-Key is kept (0: core.DefaultIdempotencyTTL).
	KeyTTL time.Duration
}

// Service explains turns: it walks an answer back to the context the model
// was shown, the entries that context came from and the turns that wrote
// them, and records ablation reruns. Safe for concurrent use.
type Service struct {
	store     Store
	caps      core.Capabilities
	embedders map[string]core.Embedder
	now       func() time.Time
	keyTTL    time.Duration
}

// New returns a Service.
func New(d Deps) *Service {
	if d.Now == nil {
		d.Now = time.Now
	}
	return &Service{store: d.Store, caps: d.Caps, embedders: d.Embedders, now: d.Now, keyTTL: d.KeyTTL}
}

// MaxExplainDepth bounds how far back an explanation walks.
const MaxExplainDepth = 5

// maxLinkedRuns bounds the recordings one explanation reads.
const maxLinkedRuns = 8

// maxTurnRuns bounds the runs opened for one turn that an explanation lists.
const maxTurnRuns = 200

// Explain backtracks one turn of a conversation: its answer, the context
// the model was shown, the entries that context came from and the turns
// and runs that wrote them. With depth > 1, each origin entry written by an
// earlier turn gets that turn's explanation too.
//
// The walk always terminates: depth bounds its steps. Within a conversation
// only origins with SourceTurn strictly less than the turn being explained
// are followed, so a step there moves to a smaller positive turn; an origin
// of a principal-scoped memory written by another conversation of the same
// principal is followed into that conversation's turn.
func (s *Service) Explain(ctx context.Context, id core.Identity, turn, depth int) (Explanation, error) {
	if turn < 1 {
		return Explanation{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "explainTurn", Path: "turn", Detail: "`turn` starts at 1.", Fix: 1}
	}
	depth = min(max(depth, 1), MaxExplainDepth)
	ex, err := s.explainOne(ctx, id, turn)
	if err != nil {
		return Explanation{}, err
	}
	if ex.Answer.Source == "none" && len(ex.Context.Recalls) == 0 && len(ex.Context.Runs) == 0 {
		return Explanation{}, core.InConversation("turn", fmt.Sprint(turn), id)
	}
	if depth > 1 {
		type at struct {
			conversation string
			turn         int
		}
		seen := map[at]bool{}
		for _, o := range ex.Origins {
			if o.Entry == nil || o.Entry.Turn < 1 {
				continue
			}
			// An entry of a principal-scoped memory may come from another conversation of the
			// same principal: its explanation is that conversation's turn.
			from := id
			if c := o.Entry.ConversationID; c != "" && c != id.ConversationID {
				from.ConversationID = c
			} else if o.Entry.Turn >= turn {
				continue
			}
			k := at{from.ConversationID, o.Entry.Turn}
			if seen[k] {
				continue
			}
			seen[k] = true
			earlier, err := s.Explain(ctx, from, o.Entry.Turn, depth-1)
			if errors.Is(err, core.ErrNotFound) {
				continue
			}
			if err != nil {
				return Explanation{}, err
			}
			ex.Earlier = append(ex.Earlier, earlier)
		}
		slices.SortFunc(ex.Earlier, func(a, b Explanation) int { return b.Turn - a.Turn })
	}
	return ex, nil
}

// explainOne gathers one turn's records from the store and assembles them.
func (s *Service) explainOne(ctx context.Context, id core.Identity, turn int) (Explanation, error) {
	tenant, ns := id.Tenant, id.Namespace()
	now := s.now().UTC()
	r := ExplainRecords{Identity: id, Turn: turn, Entries: map[string]EntryLookup{}}

	entries, err := s.turnEntries(ctx, id, turn, now)
	if err != nil {
		return Explanation{}, err
	}
	var runIDs []string
	for _, e := range entries {
		if e.Kind == core.KindSnapshot {
			r.Snapshots = append(r.Snapshots, e)
		} else {
			r.Messages = append(r.Messages, e)
		}
		runIDs = appendUnique(runIDs, e.SourceRunID)
	}
	linkedRuns, linkedRecalls, err := s.store.TurnLinks(ctx, tenant, ns, turn)
	if err != nil {
		return Explanation{}, err
	}
	for _, run := range linkedRuns {
		runIDs = appendUnique(runIDs, run)
	}
	if r.Recalls, err = s.turnRecalls(ctx, tenant, ns, turn, linkedRecalls); err != nil {
		return Explanation{}, err
	}
	for _, rc := range r.Recalls {
		runIDs = appendUnique(runIDs, rc.RunID)
	}
	// Runs opened for this conversation and turn, looked up by the turn (not among the
	// conversation's most recent runs, which a long conversation's later turns push out).
	opened, err := s.store.ListRuns(ctx, runs.RunQuery{Tenant: tenant, Namespace: ns, Turn: turn, Limit: maxTurnRuns})
	if err != nil {
		return Explanation{}, err
	}
	for _, run := range opened {
		runIDs = appendUnique(runIDs, run.ID)
	}
	r.Runs = runIDs
	for _, runID := range runIDs[:min(len(runIDs), maxLinkedRuns)] {
		run, events, err := s.store.RunEvents(ctx, tenant, runID, -1, 0)
		if errors.Is(err, core.ErrNotFound) {
			continue // linked but never recorded (or another tenant's id): reported as no-recording
		}
		if err != nil {
			return Explanation{}, err
		}
		rec := Recording{RunID: run.ID, Complete: run.Complete, Finished: run.Finished, DroppedEvents: run.Dropped}
		for _, e := range events {
			rec.Events = append(rec.Events, e.Event)
		}
		r.Recordings = append(r.Recordings, rec)
	}

	// Resolve every admitted candidate's entry as it is now.
	for _, rc := range r.Recalls {
		for _, mr := range rc.Memories {
			lookupNS := ns
			switch {
			case mr.Flavor == "rag":
				lookupNS = core.CorpusNamespace
			case mr.Scope == core.ScopePrincipal:
				lookupNS = id.PrincipalNamespace()
			}
			for _, c := range mr.Evidence.Candidates {
				key := mr.MemoryID + "#" + c.ID
				if !c.Admitted {
					continue
				}
				if _, done := r.Entries[key]; done {
					continue
				}
				lk, err := s.store.LookupEntry(ctx, tenant, lookupNS, mr.MemoryID, c.ID, now)
				if err != nil {
					return Explanation{}, err
				}
				r.Entries[key] = lk
			}
		}
	}
	// And every memory piece the recordings show.
	for _, rec := range r.Recordings {
		for _, call := range LedgerOf(rec).Calls {
			for _, piece := range call.Pieces {
				mem, entry, ok := ParseInjectionID(piece.SourceID)
				if _, done := r.Entries[mem+"#"+entry]; !ok || done {
					continue
				}
				lk, err := s.store.LookupEntry(ctx, tenant, ns, mem, entry, now)
				if err != nil {
					return Explanation{}, err
				}
				r.Entries[mem+"#"+entry] = lk
			}
		}
	}
	if r.Ablations, err = s.store.Ablations(ctx, tenant, ns, turn); err != nil {
		return Explanation{}, err
	}
	r.Influence = s.influenceScorers(ctx)
	return AssembleExplanation(r), nil
}

// InfluenceStrategy describes one suspect-ranking proxy.
type InfluenceStrategy struct {
	Name         string
	Description  string
	Requirements []core.Requirement
	Offerable    bool
	Missing      []core.Requirement
}

// InfluenceStrategies is the catalogue of influence proxies on this
// deployment, in the same shape as the strategy catalogue.
func (s *Service) InfluenceStrategies() []InfluenceStrategy {
	_, hasEmbedder := s.caps.DefaultEmbedder()
	sem := InfluenceStrategy{Name: "semantic-alignment",
		Description: "Cosine similarity between each injected piece and the final answer, embedded with the server's default embedder. " +
			"A correlational proxy for influence, never a cause; with the built-in lexical embedder it measures shared wording.",
		Requirements: []core.Requirement{core.ReqEmbedder}, Offerable: hasEmbedder, Missing: []core.Requirement{}}
	if !hasEmbedder {
		sem.Missing = []core.Requirement{core.ReqEmbedder}
	}
	return []InfluenceStrategy{
		{Name: "lexical-overlap", Description: "The share of the final answer's distinct words (three letters or more) that also occur in the injected piece. " +
			"Free and always available. A correlational proxy for influence, never a cause.",
			Requirements: []core.Requirement{}, Offerable: true, Missing: []core.Requirement{}},
		sem,
	}
}

// influenceScorers are the proxies this deployment can run.
func (s *Service) influenceScorers(ctx context.Context) []InfluenceScorer {
	out := []InfluenceScorer{{Name: "lexical-overlap", Score: LexicalOverlap}}
	info, ok := s.caps.DefaultEmbedder()
	if !ok {
		return out
	}
	emb, ok := s.embedders[info.ID]
	if !ok {
		return out
	}
	out = append(out, InfluenceScorer{Name: "semantic-alignment", Score: func(piece, answer string) (float64, bool) {
		if !core.HasWords(piece) || !core.HasWords(answer) {
			return 0, false
		}
		vs, err := emb.Embed(ctx, []string{piece, answer})
		if err != nil || len(vs) != 2 {
			return 0, false
		}
		return cosineSimilarity(vs[0], vs[1]), true
	}})
	return out
}

func cosineSimilarity(a, b []float32) float64 {
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot, na, nb = dot+x*y, na+x*x, nb+y*y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / (math.Sqrt(na) * math.Sqrt(nb))
}

// RecordAblation records a rerun of a turn without some injected pieces.
func (s *Service) RecordAblation(ctx context.Context, id core.Identity, turn int, excluded []string, answer string, flipped bool) (Ablation, error) {
	a, _, err := s.RecordAblationWithKey(ctx, id, turn, excluded, answer, flipped, "")
	return a, err
}

// RecordAblationWithKey is RecordAblation with an Idempotency-Key (none when key is ""): a
// retry of the same record with the same key answers the ablation as first recorded (replayed
// true) and records no second one, which would count twice toward the verdict; the key with
// another request is refused (idempotency-key-reused).
func (s *Service) RecordAblationWithKey(ctx context.Context, id core.Identity, turn int, excluded []string, answer string, flipped bool, key string) (Ablation, bool, error) {
	a, replayed, err := s.recordAblation(ctx, id, turn, excluded, answer, flipped, key)
	if errors.Is(err, core.ErrKeyReused) {
		return Ablation{}, false, core.KeyReused("recordAblation")
	}
	return a, replayed, err
}

func (s *Service) recordAblation(ctx context.Context, id core.Identity, turn int, excluded []string, answer string, flipped bool, key string) (Ablation, bool, error) {
	if turn < 1 {
		return Ablation{}, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "recordAblation", Path: "turn", Detail: "`turn` starts at 1.", Fix: 1}
	}
	if reason := core.CheckText(answer); reason != "" {
		return Ablation{}, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "recordAblation", Path: "answer", Detail: "`answer` " + reason + "."}
	}
	if entries, err := s.turnEntries(ctx, id, turn, s.now().UTC()); err != nil {
		return Ablation{}, false, err
	} else if len(entries) == 0 {
		recalls, err := s.turnRecalls(ctx, id.Tenant, id.Namespace(), turn, nil)
		if err != nil {
			return Ablation{}, false, err
		}
		if len(recalls) == 0 {
			return Ablation{}, false, core.InConversation("turn", fmt.Sprint(turn), id)
		}
	}
	a := Ablation{ID: core.NewID("abl_", 10), Excluded: excluded, Answer: answer, Flipped: flipped,
		CreatedAt: s.now().UTC().Truncate(time.Millisecond)}
	if a.Excluded == nil {
		a.Excluded = []string{}
	}
	once, err := core.NewOnce(key, "recordAblation", struct {
		Identity core.Identity
		Turn     int
		Excluded []string
		Answer   string
		Flipped  bool
	}{id, turn, a.Excluded, answer, flipped}, a, a.CreatedAt, s.keyTTL)
	if err != nil {
		return Ablation{}, false, err
	}
	if err := s.store.SaveAblation(ctx, id.Tenant, id.Namespace(), turn, a, once); err != nil {
		return Ablation{}, false, err
	}
	if once != nil && once.Replay != nil {
		var first Ablation
		if err := json.Unmarshal(once.Replay, &first); err != nil {
			return Ablation{}, false, fmt.Errorf("decode stored idempotent response: %w", err)
		}
		return first, true, nil
	}
	return a, false, nil
}

// RunContext returns one run's per-model-call context ledger.
func (s *Service) RunContext(ctx context.Context, tenant, runID string) (RunContext, error) {
	run, events, err := s.store.RunEvents(ctx, tenant, runID, -1, 0)
	if err != nil {
		return RunContext{}, err
	}
	rec := Recording{RunID: run.ID, Complete: run.Complete, Finished: run.Finished, DroppedEvents: run.Dropped}
	for _, e := range events {
		rec.Events = append(rec.Events, e.Event)
	}
	return LedgerOf(rec), nil
}

// turnRecalls returns the receipts of what the turn was offered: those made for it, or named
// in linked, oldest first. A rerun of the turn (a recall with `exclude`) is not what the turn
// was offered, and is left out unless linked names it.
func (s *Service) turnRecalls(ctx context.Context, tenant, ns string, turn int, linked []string) ([]recall.RecallResult, error) {
	all, err := s.store.RecallsFor(ctx, tenant, ns, turn, linked)
	if err != nil {
		return nil, err
	}
	out := all[:0:0]
	for _, rc := range all {
		if rc.Rerun && !slices.Contains(linked, rc.RecallID) {
			continue
		}
		out = append(out, rc)
	}
	return out, nil
}

// appendUnique appends x to xs unless it is empty or already there.
func appendUnique(xs []string, x string) []string {
	if x == "" || slices.Contains(xs, x) {
		return xs
	}
	return append(xs, x)
}

// turnEntries are the snapshots and messages a turn wrote: in the conversation's namespace,
// and, for a conversation of a principal, those its principal-scoped memories keep.
func (s *Service) turnEntries(ctx context.Context, id core.Identity, turn int, now time.Time) ([]core.Entry, error) {
	entries, err := s.store.TurnEntries(ctx, id.Tenant, id.Namespace(), "", turn, now)
	if err != nil || id.Principal == "" {
		return entries, err
	}
	shared, err := s.store.TurnEntries(ctx, id.Tenant, id.PrincipalNamespace(), id.ConversationID, turn, now)
	return append(entries, shared...), err
}
