package explain

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/core/runs"
)

// Explanation is the backtrack of one turn: the answer, the context the
// model was shown, the stored entries that context came from, and flags
// wherever a link is unknown instead of a guess.
type Explanation struct {
	Identity core.Identity
	Turn     int
	Answer   ExplainAnswer
	Context  ExplainContext
	Origins  []Origin
	Honesty  []HonestyFlag
	Suspects []Suspect
	Earlier  []Explanation
}

// ExplainAnswer is what the turn answered, from its snapshot when a causal
// memory holds one, else from its messages.
type ExplainAnswer struct {
	Source   string // snapshot, messages or none
	MemoryID string
	EntryID  string
	RunID    string
	Snapshot *core.Snapshot
	Messages []core.Message
}

// ExplainContext is what the model was shown: per model call from the
// linked runs' recordings, and the linked recall receipts in full.
type ExplainContext struct {
	Runs    []RunContext
	Recalls []recall.RecallResult
}

// RunContext is one run's per-model-call context ledger.
type RunContext struct {
	RunID         string
	Complete      bool
	DroppedEvents int64
	Calls         []ModelCall
}

// ModelCall is one model call (iteration) and the pieces it carried.
type ModelCall struct {
	Iteration int
	Pieces    []ContextPiece
}

// ContextPiece is one context.injected announcement; Repeats counts the
// identical re-announcements folded into it within the same call.
type ContextPiece struct {
	Slot, Source, SourceID, ContentHash, Summary, Reason string
	Score, Threshold                                     *float64
	Rank                                                 *int
	Repeats                                              int
}

// Origin resolves one injected piece to the stored entry it came from.
type Origin struct {
	InjectionID string
	MemoryID    string
	EntryID     string
	RecallID    string
	Score       *float64
	Rank        int
	Threshold   *float64
	// Status: present, replaced (changed since it was recalled), expired,
	// forgotten (its conversation was forgotten) or missing.
	Status string
	Entry  *OriginEntry
	// Exposure says whether the model was shown it: ExposureShown (in the
	// model calls ShownIn lists, from the linked recordings), ExposureOffered
	// (a linked receipt offered it, and the linked recordings, whole, show
	// no call that carried it) or ExposureUnknown (no recording is linked,
	// or one lost events or never finished, so a call that carried it may
	// be missing from the ledger).
	Exposure string
	ShownIn  []ShownIn
}

// Exposures of an origin, the design's "shown, offered, unknown".
const (
	ExposureShown   = "shown"
	ExposureOffered = "offered"
	ExposureUnknown = "unknown"
)

// ShownIn is one model call that carried a piece: the run and its iteration.
type ShownIn struct {
	RunID     string
	Iteration int
}

// OriginEntry is what an origin's entry says, enough to follow it back.
type OriginEntry struct {
	Turn int
	// ConversationID is the conversation whose turn wrote the entry, when it
	// is another one (an entry of a principal-scoped memory); "" when it is
	// the explained conversation.
	ConversationID string
	RunID          string
	Kind           core.EntryKind
	Query          string
	FinalContent   string
	Text           string
	UpdatedAt      time.Time
}

// HonestyFlag says what the explanation does not know, instead of silence.
type HonestyFlag struct {
	Flag          string // no-recording, recording-truncated, recording-incomplete, no-recall-linked, entry-missing, no-answer
	Detail        string
	DroppedEvents int64
	RunID         string
	EntryID       string
}

// Suspect is an injected piece ranked by an influence proxy against the
// answer. Scores are correlational proxies, never causes. Suspects are drawn
// from what the model was shown (Exposure shown); pieces whose exposure is
// unknown (no recording, or an incomplete one) are ranked too, saying so;
// pieces known not to have been shown are never suspects.
type Suspect struct {
	InjectionID string
	Strategy    string // lexical-overlap or semantic-alignment
	Score       float64
	Rank        int
	Verdict     string // confirmed, not-confirmed, inconclusive, untested
	Reruns      int
	Flips       int
	Note        string
	Exposure    string // shown or unknown
}

// Ablation is a recorded rerun of a turn without some injected pieces.
type Ablation struct {
	ID        string
	Excluded  []string // injection ids; empty: a baseline rerun
	Answer    string
	Flipped   bool
	CreatedAt time.Time
}

// EntryLookup is an origin entry as the store has it now.
type EntryLookup struct {
	Entry     core.Entry
	Found     bool
	Expired   bool
	Forgotten bool
}

// ExplainRecords are the stored records one explanation is assembled from.
type ExplainRecords struct {
	Identity   core.Identity
	Turn       int
	Snapshots  []core.Entry // the turn's snap-{turn} entries (causal memories)
	Messages   []core.Entry // the turn's msg-{turn}-* entries (episodic memories)
	Recalls    []recall.RecallResult
	Recordings []Recording
	// Runs are the run ids linked to the turn (its snapshot's, its turn
	// link's, its recalls', runs opened for it).
	Runs []string
	// Entries resolves "memoryId#entryId" of every admitted candidate.
	Entries   map[string]EntryLookup
	Ablations []Ablation
	// Influence scores a piece of text against the answer; one per
	// available strategy.
	Influence []InfluenceScorer
}

// Recording is a run's envelope and retained events, as explain reads them.
type Recording struct {
	RunID         string
	Complete      bool
	Finished      bool
	DroppedEvents int64
	Events        []runs.Event
}

// InfluenceScorer scores how much a piece resembles the answer.
type InfluenceScorer struct {
	Name  string
	Score func(piece, answer string) (float64, bool)
}

// AssembleExplanation builds the explanation of one turn from its records.
// It reads top to bottom as the backtrack does: answer, context, origins,
// honesty, suspects. It does no I/O.
func AssembleExplanation(r ExplainRecords) Explanation {
	ex := Explanation{Identity: r.Identity, Turn: r.Turn, Origins: []Origin{}, Honesty: []HonestyFlag{}, Suspects: []Suspect{}}

	// 1. The answer: a snapshot when a causal memory holds one, else messages.
	ex.Answer = answerOf(r)
	if ex.Answer.Source == "none" {
		ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "no-answer", Detail: fmt.Sprintf("nothing is stored for turn %d of this conversation (no snapshot, no messages).", r.Turn)})
	}
	if snap := ex.Answer.Snapshot; snap != nil && len(snap.Unreported) > 0 {
		what := "no evidence"
		if len(snap.Unreported) < len(core.EvidenceFields) {
			what = "no " + strings.Join(snap.Unreported, ", ")
		}
		ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "evidence-not-reported",
			Detail: fmt.Sprintf("the agent reported %s for turn %d (post the turn with `evidence`); what it did not report is left out, never shown as zero.", what, r.Turn)})
	}

	// 2. The context: each linked run's per-call ledger, and the receipts.
	for _, rec := range r.Recordings {
		ex.Context.Runs = append(ex.Context.Runs, LedgerOf(rec))
		switch {
		case rec.DroppedEvents > 0:
			ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "recording-truncated", RunID: rec.RunID, DroppedEvents: rec.DroppedEvents,
				Detail: fmt.Sprintf("run %q dropped its %d oldest events: the earliest model calls are not in the ledger.", rec.RunID, rec.DroppedEvents)})
		}
		if !rec.Complete {
			ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "recording-incomplete", RunID: rec.RunID,
				Detail: fmt.Sprintf("run %q was not finished as complete: its ledger may stop before the answer.", rec.RunID)})
		}
	}
	if len(r.Recordings) == 0 {
		detail := "no run recording is linked to this turn, so what each model call was shown is unknown."
		if len(r.Runs) > 0 {
			detail = fmt.Sprintf("the linked run(s) %s have no recording on this server.", strings.Join(r.Runs, ", "))
		}
		ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "no-recording", Detail: detail})
	}
	ex.Context.Recalls = r.Recalls
	if len(r.Recalls) == 0 {
		ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "no-recall-linked",
			Detail: "no recall receipt is linked to this turn (send `turn` on recall, or `recallIds` on the turn), so what memory offered is unknown."})
	}

	// Which model calls carried each piece (by the id it was announced under), and whether
	// the ledgers are whole: only then does "in no call" mean "not shown".
	shown := map[string][]ShownIn{}
	whole := len(ex.Context.Runs) > 0
	for _, run := range ex.Context.Runs {
		whole = whole && run.Complete && run.DroppedEvents == 0
		for _, call := range run.Calls {
			for _, piece := range call.Pieces {
				if piece.SourceID != "" {
					shown[piece.SourceID] = append(shown[piece.SourceID], ShownIn{RunID: run.RunID, Iteration: call.Iteration})
				}
			}
		}
	}
	expose := func(o *Origin, wholeMemory bool) {
		o.ShownIn = shown[o.InjectionID]
		if wholeMemory {
			// Offered inside its memory's one injection: shown where that injection was.
			o.ShownIn = append(slices.Clone(o.ShownIn), shown["memory:"+o.MemoryID]...)
		}
		switch {
		case len(o.ShownIn) > 0:
			o.Exposure = ExposureShown
		case whole:
			o.Exposure = ExposureOffered
		default:
			o.Exposure = ExposureUnknown
		}
	}

	// 3. Origins: every admitted memory piece, resolved to its entry now.
	pieces := map[string]string{} // injection id → text injected
	for _, rc := range r.Recalls {
		injected := map[string]bool{}
		for _, inj := range rc.Injections {
			pieces[inj.ID], _ = rc.Text(inj.SystemSpan)
			injected[inj.ID] = true
		}
		for _, mr := range rc.Memories {
			for _, c := range mr.Evidence.Candidates {
				if !c.Admitted {
					continue
				}
				o := Origin{InjectionID: "memory:" + mr.MemoryID + "#" + c.ID, MemoryID: mr.MemoryID, EntryID: c.ID,
					RecallID: rc.RecallID, Score: c.Score, Rank: c.Rank, Threshold: mr.Evidence.Threshold}
				if _, ok := pieces[o.InjectionID]; !ok {
					if text, ok := rc.Text(c.SystemSpan); ok {
						pieces[o.InjectionID] = text
					}
				}
				lk := r.Entries[mr.MemoryID+"#"+c.ID]
				o.Status, o.Entry = originStatus(lk, rc.CreatedAt)
				expose(&o, !injected[o.InjectionID] && injected["memory:"+mr.MemoryID])
				if o.Status != "present" && o.Status != "replaced" {
					ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "entry-missing", EntryID: o.InjectionID,
						Detail: fmt.Sprintf("%s was injected but is now %s: what it said is known only from the receipt's systemPrompt.", o.InjectionID, o.Status)})
				}
				ex.Origins = append(ex.Origins, o)
			}
		}
	}

	// Pieces the recordings show came from memory, that no linked receipt
	// admitted: resolved too, with what the recording says of them.
	covered := map[string]bool{}
	for _, o := range ex.Origins {
		covered[o.InjectionID] = true
	}
	for _, run := range ex.Context.Runs {
		for _, call := range run.Calls {
			for _, piece := range call.Pieces {
				mem, entry, ok := ParseInjectionID(piece.SourceID)
				if !ok || covered[piece.SourceID] {
					continue
				}
				covered[piece.SourceID] = true
				o := Origin{InjectionID: piece.SourceID, MemoryID: mem, EntryID: entry, Score: piece.Score, Threshold: piece.Threshold}
				if piece.Rank != nil {
					o.Rank = *piece.Rank
				}
				o.Status, o.Entry = originStatus(r.Entries[mem+"#"+entry], time.Time{})
				if o.Status == "replaced" {
					o.Status = "present" // no receipt time to compare with
				}
				expose(&o, false)
				if o.Status != "present" {
					ex.Honesty = append(ex.Honesty, HonestyFlag{Flag: "entry-missing", EntryID: o.InjectionID,
						Detail: fmt.Sprintf("%s was shown to the model but is now %s.", o.InjectionID, o.Status)})
				}
				if _, ok := pieces[piece.SourceID]; !ok && piece.Summary != "" {
					pieces[piece.SourceID] = piece.Summary
				}
				ex.Origins = append(ex.Origins, o)
			}
		}
	}

	// 4. Suspects: the pieces the model was shown (or may have been: exposure unknown),
	// ranked by influence proxies, with the ablation verdicts recorded for this turn. A
	// piece the recordings show was offered and not shown is no suspect.
	answer := answerText(ex.Answer)
	exposure := map[string]string{}
	for _, o := range ex.Origins {
		exposure[o.InjectionID] = o.Exposure
	}
	ids := make([]string, 0, len(pieces))
	for id := range pieces {
		// Only per-entry pieces can be suspects: a whole-memory injection
		// cannot be excluded on its own to test it.
		if _, _, ok := ParseInjectionID(id); ok && exposure[id] != ExposureOffered {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	for _, scorer := range r.Influence {
		for _, id := range ids {
			score, ok := scorer.Score(pieces[id], answer)
			if !ok {
				continue
			}
			s := Suspect{InjectionID: id, Strategy: scorer.Name, Score: score, Exposure: exposure[id],
				Note: "a correlational proxy: how much this piece resembles the answer, not proof that it caused it"}
			if s.Exposure == ExposureUnknown {
				s.Note = "offered by recall, and whether the model was shown it is unknown (no whole recording is linked); " +
					"a correlational proxy: how much this piece resembles the answer, not proof that it caused it"
			}
			s.Verdict, s.Reruns, s.Flips = Verdict(id, r.Ablations)
			ex.Suspects = append(ex.Suspects, s)
		}
	}
	// Within each strategy, what the model was shown ranks before what it may not have been.
	sort.SliceStable(ex.Suspects, func(i, j int) bool {
		a, b := ex.Suspects[i], ex.Suspects[j]
		if a.Strategy != b.Strategy {
			return a.Strategy < b.Strategy
		}
		if a.Exposure != b.Exposure {
			return a.Exposure == ExposureShown
		}
		return a.Score > b.Score
	})
	rank := map[string]int{}
	for i := range ex.Suspects {
		rank[ex.Suspects[i].Strategy]++
		ex.Suspects[i].Rank = rank[ex.Suspects[i].Strategy]
	}
	return ex
}

func answerOf(r ExplainRecords) ExplainAnswer {
	for _, e := range r.Snapshots {
		var snap core.Snapshot
		if json.Unmarshal(e.Value, &snap) == nil {
			return ExplainAnswer{Source: "snapshot", MemoryID: e.MemoryID, EntryID: e.ID, RunID: e.SourceRunID, Snapshot: &snap}
		}
	}
	if len(r.Messages) > 0 {
		a := ExplainAnswer{Source: "messages", MemoryID: r.Messages[0].MemoryID}
		msgs := slices.Clone(r.Messages)
		sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].Index < msgs[j].Index })
		for _, e := range msgs {
			if e.MemoryID != a.MemoryID {
				continue
			}
			var m core.Message
			if json.Unmarshal(e.Value, &m) == nil {
				a.Messages = append(a.Messages, m)
			}
			a.RunID = e.SourceRunID
		}
		return a
	}
	return ExplainAnswer{Source: "none"}
}

func answerText(a ExplainAnswer) string {
	if a.Snapshot != nil {
		return a.Snapshot.FinalContent
	}
	for _, m := range a.Messages {
		if m.Role == "assistant" {
			return m.Content
		}
	}
	return ""
}

// originStatus says what became of an injected entry since it was recalled.
func originStatus(lk EntryLookup, recalledAt time.Time) (string, *OriginEntry) {
	switch {
	case lk.Forgotten:
		return "forgotten", nil
	case !lk.Found:
		return "missing", nil
	}
	e := lk.Entry
	oe := &OriginEntry{Turn: e.SourceTurn, ConversationID: e.SourceConversation, RunID: e.SourceRunID, Kind: e.Kind, UpdatedAt: e.UpdatedAt}
	switch e.Kind {
	case core.KindSnapshot:
		var snap core.Snapshot
		if json.Unmarshal(e.Value, &snap) == nil {
			oe.Query, oe.FinalContent = snap.Query, snap.FinalContent
		}
	default:
		var v map[string]any
		if json.Unmarshal(e.Value, &v) == nil {
			for _, k := range []string{"content", "text", "value"} {
				if s, ok := v[k].(string); ok {
					oe.Text = core.Truncate(s, 2000)
					break
				}
			}
		}
	}
	switch {
	case lk.Expired:
		return "expired", oe
	case e.UpdatedAt.After(recalledAt):
		return "replaced", oe
	}
	return "present", oe
}

// ParseInjectionID splits "memory:<memoryId>#<entryId>".
func ParseInjectionID(id string) (memoryID, entryID string, ok bool) {
	rest, found := strings.CutPrefix(id, "memory:")
	if !found {
		return "", "", false
	}
	memoryID, entryID, ok = strings.Cut(rest, "#")
	return memoryID, entryID, ok && memoryID != "" && entryID != ""
}

// Verdict applies the ablation rule to one injected piece: confirmed only
// when excluding it flipped the answer in a majority of at least two
// reruns and no baseline rerun (nothing excluded) flipped; not-confirmed
// when it was excluded at least once, never flipped, and the baseline is
// stable; inconclusive otherwise; untested when it was never excluded.
func Verdict(id string, ablations []Ablation) (verdict string, reruns, flips int) {
	baselineFlipped := false
	for _, a := range ablations {
		if len(a.Excluded) == 0 {
			baselineFlipped = baselineFlipped || a.Flipped
			continue
		}
		if slices.Contains(a.Excluded, id) {
			reruns++
			if a.Flipped {
				flips++
			}
		}
	}
	switch {
	case reruns == 0:
		return "untested", 0, 0
	case baselineFlipped:
		return "inconclusive", reruns, flips
	case reruns >= 2 && flips*2 > reruns:
		return "confirmed", reruns, flips
	case flips == 0:
		return "not-confirmed", reruns, flips
	}
	return "inconclusive", reruns, flips
}

// LedgerOf folds a recording into its per-model-call context ledger. A
// model call is identified by the announcement payload's `iteration`
// (else its meta's); identical announcements within one call are folded
// into one piece with a repeat count.
func LedgerOf(rec Recording) RunContext {
	rc := RunContext{RunID: rec.RunID, Complete: rec.Complete, DroppedEvents: rec.DroppedEvents, Calls: []ModelCall{}}
	callAt := map[int]int{}
	seen := map[int]map[string]int{}
	for _, ev := range rec.Events {
		if !runs.IsAnnouncement(ev.Type) {
			continue
		}
		var p map[string]any
		if json.Unmarshal(ev.Payload, &p) != nil {
			continue
		}
		iteration := intField(p, "iteration")
		if iteration == 0 {
			var meta map[string]any
			if json.Unmarshal(ev.Meta, &meta) == nil {
				iteration = intField(meta, "iteration")
			}
		}
		i, ok := callAt[iteration]
		if !ok {
			i = len(rc.Calls)
			callAt[iteration] = i
			rc.Calls = append(rc.Calls, ModelCall{Iteration: iteration, Pieces: []ContextPiece{}})
			seen[iteration] = map[string]int{}
		}
		key := string(ev.Payload)
		if at, dup := seen[iteration][key]; dup {
			rc.Calls[i].Pieces[at].Repeats++
			continue
		}
		seen[iteration][key] = len(rc.Calls[i].Pieces)
		rc.Calls[i].Pieces = append(rc.Calls[i].Pieces, ContextPiece{
			Slot: strField(p, "slot"), Source: strField(p, "source"), SourceID: firstStr(p, "sourceId", "id"),
			ContentHash: fmt.Sprint(orEmpty(p["contentHash"])), Summary: core.Truncate(strField(p, "summary"), 500), Reason: strField(p, "reason"),
			Score: numField(p, "retrievalScore", "score"), Threshold: numField(p, "threshold"), Rank: rankField(p),
		})
	}
	return rc
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func firstStr(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s := strField(m, k); s != "" {
			return s
		}
	}
	return ""
}

func strField(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func intField(m map[string]any, k string) int {
	f, _ := m[k].(float64)
	return int(f)
}

func numField(m map[string]any, keys ...string) *float64 {
	for _, k := range keys {
		if f, ok := m[k].(float64); ok {
			return &f
		}
	}
	return nil
}

func rankField(m map[string]any) *int {
	for _, k := range []string{"rankPosition", "rank"} {
		if f, ok := m[k].(float64); ok {
			n := int(f)
			return &n
		}
	}
	return nil
}

// LexicalOverlap is the free influence proxy: the share of the answer's
// distinct words (three letters or more) that also occur in the piece.
func LexicalOverlap(piece, answer string) (float64, bool) {
	a := wordSet(answer)
	if len(a) == 0 {
		return 0, false
	}
	p := wordSet(piece)
	shared := 0
	for w := range a {
		if p[w] {
			shared++
		}
	}
	return float64(shared) / float64(len(a)), true
}

func wordSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !core.IsWordRune(r) }) {
		if len([]rune(w)) >= 3 {
			out[w] = true
		}
	}
	return out
}

// Store is what explanations read and record: the links a turn wrote, the
// recall receipts, entries as they are now, recordings and ablations.
type Store interface {
	// ListRuns lists runs newest first; RunEvents returns a run and its
	// retained events with index > after, oldest first (limit ≤ 0: all).
	ListRuns(ctx context.Context, q runs.RunQuery) ([]runs.Run, error)
	RunEvents(ctx context.Context, tenant, id string, after int64, limit int) (runs.Run, []runs.RunEvent, error)
	// LinkTurn adds explicit links to a turn (a run, recall receipts).
	LinkTurn(ctx context.Context, tenant, namespace string, turn int, runID string, recallIDs []string, now time.Time) error
	// TurnLinks returns the runs and recalls linked to a turn.
	TurnLinks(ctx context.Context, tenant, namespace string, turn int) (runIDs, recallIDs []string, err error)
	// RecallsFor returns the tenant's receipts for the namespace that were
	// made for turn, or are named in ids (ids of another namespace or
	// tenant are ignored), oldest first.
	RecallsFor(ctx context.Context, tenant, namespace string, turn int, ids []string) ([]recall.RecallResult, error)
	// TurnEntries returns the live snap-{turn} and msg-{turn}-* entries of
	// every memory in the namespace.
	//
	// With conversation set (a principal's namespace, which holds every
	// conversation's), only the entries that conversation wrote.
	TurnEntries(ctx context.Context, tenant, namespace, conversation string, turn int, now time.Time) ([]core.Entry, error)
	// LookupEntry resolves an entry as it is now, expired ones included.
	LookupEntry(ctx context.Context, tenant, namespace, memoryID, id string, now time.Time) (EntryLookup, error)
	// SaveAblation records a rerun (idempotently with once, see core.Once:
	// a replay records nothing and sets once.Replay); Ablations lists a
	// turn's, oldest first.
	SaveAblation(ctx context.Context, tenant, namespace string, turn int, a Ablation, once *core.Once) error
	Ablations(ctx context.Context, tenant, namespace string, turn int) ([]Ablation, error)
	// UsageStore serves the forward view (usage.go).
	UsageStore
}
