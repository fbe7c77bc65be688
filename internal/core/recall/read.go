package recall

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// ReadInput is everything one memory's read side needs; the service loads
// it, so reading is a pure function of this value.
type ReadInput struct {
	Memory    core.Memory
	QueryHash string
	// Entries are the memory's live entries in the namespace, newest first
	// (by turn, index, id), loaded for window, budget, decay, summarize and
	// extract reads. Order is re-established here, so any order works.
	Entries []core.Entry
	// EntriesTruncated says Entries are only the newest of a memory holding
	// more than a recall reads: the evidence then never claims a complete
	// candidate list.
	EntriesTruncated bool
	// Rankings holds the store's ranking for each topK part, in the order
	// the strategy lists them (a hybrid's parts depth first), each best first
	// and cut to its part's own k + rejectWindow. A topK part without one
	// (or with a nil Ranked) reads as an empty ranking, and says so in the
	// note.
	Rankings               []PartRanking
	ContextTokensRemaining *int // budget only; nil means unknown
	Now                    time.Time
}

// PartRanking is what one topK part reads: the store's ranking and the
// embedder that produced the query's vector.
type PartRanking struct {
	Ranked     *RankResult
	EmbedderID string
	Dimensions int
	// Unembeddable: the query has no words this embedder can represent, so
	// nothing was ranked (and nothing is known about the corpus).
	Unembeddable bool
	// Settings are the part's resolved k, ranking and threshold (strategies.ResolveTopK).
	Settings strategies.TopKSettings
}

// ReasonAlreadyAdmitted marks a hybrid part's candidate that an earlier
// part of the same hybrid already put in the prompt. It is listed (so the
// evidence says the later part saw it) but neither admitted again nor
// counted against the later part's limits.
const ReasonAlreadyAdmitted = "already-admitted"

// Budget decisions recorded in Evidence.Decision.
const (
	DecisionPick         = "pick"
	DecisionSkipEmpty    = "skip-empty"
	DecisionSkipNoBudget = "skip-no-budget"
)

const (
	// listedRejects caps how many rejected candidates a non-ranking read
	// lists (admitted ones are always listed); CandidatesComplete says when
	// the list was cut. topK lists what the store returned (k + rejectWindow).
	listedRejects = 10
	// maxExtractRead caps the facts or beats an extract read admits.
	maxExtractRead = 50
	// unknownBudgetEntries is the budget strategy's count limit when neither
	// the context budget nor maxEntries is known.
	unknownBudgetEntries = 20
)

// ReadMemory runs the memory's strategy (a hybrid: each part, composed) and
// returns the formatted recall and its evidence. The recall holds at most
// one message, role "system", whose content is the admitted fragments
// joined with "\n\n" in prompt order; it holds none when nothing was
// admitted.
func ReadMemory(in ReadInput) MemoryRecall {
	r := reader{in: in, m: in.Memory, topKSeen: new(int)}
	res := r.run(in.Memory.Strategy, map[string]bool{})
	flavor := in.Memory.Flavor
	if flavor != "rag" {
		flavor = "memory"
	}
	out := MemoryRecall{
		MemoryID: in.Memory.ID,
		Type:     in.Memory.Type,
		Strategy: in.Memory.Strategy,
		Flavor:   flavor,
		Messages: []core.Message{},
		Scope:    principalOnly(in.Memory.Scope),
		Evidence: res.ev,
	}
	if res.content != "" {
		out.Messages = append(out.Messages, core.Message{Role: "system", Content: res.content})
	}
	return out
}

// reader runs one memory's read.
type reader struct {
	in ReadInput
	m  core.Memory
	// topKSeen counts the topK parts read so far: the next one reads
	// in.Rankings[*topKSeen].
	topKSeen *int
}

// partRanking returns the ranking of the next topK part to be read.
func (r reader) partRanking() PartRanking {
	i := *r.topKSeen
	*r.topKSeen++
	if i < len(r.in.Rankings) {
		return r.in.Rankings[i]
	}
	return PartRanking{}
}

// readResult is one strategy's (or hybrid part's) read.
type readResult struct {
	content  string // the admitted fragments joined with "\n\n"
	ev       Evidence
	admitted []string // entry ids, in prompt order
}

// choice is one candidate's outcome, in rank order.
type choice struct {
	e      core.Entry
	score  *float64
	admit  bool
	reason string
	// vector and lexical are a ranked candidate's score components, where its ranking
	// computed them.
	vector, lexical *float64
	doc             *docValue // a document chunk's decoded value, once decoded (see document)
	frag            string    // the rendered block, once rendered (see reader.fragment)
}

// fragment is c's block, rendered once: topK renders it to cost it against maxChars, and
// finish puts the same text in the prompt.
func (r reader) fragment(c *choice) string {
	if c.frag == "" {
		c.frag = r.block(c)
	}
	return c.frag
}

// document is c's entry decoded as a document chunk: decoded once, since finish reads it for
// the candidate's attributes and again for its block.
func (c *choice) document() docValue {
	if c.doc == nil {
		d := decodeDoc(c.e)
		c.doc = &d
	}
	return *c.doc
}

func (r reader) run(s core.Strategy, skip map[string]bool) readResult {
	switch s.Kind {
	case core.Window:
		return r.window(s, skip)
	case core.Budget:
		return r.budget(s, skip)
	case core.Decay:
		return r.decay(s, skip)
	case core.Summarize:
		return r.summarize(s, skip)
	case core.Extract:
		return r.extract(s, skip)
	case core.TopK:
		return r.topK(s, skip)
	case core.Hybrid:
		return r.hybrid(s, skip)
	}
	ev := r.evidence(s.Kind)
	ev.Note = fmt.Sprintf("strategy kind %q has no read side; nothing was recalled.", s.Kind)
	ev.CandidatesComplete = true
	return readResult{ev: ev}
}

func (r reader) evidence(kind core.StrategyKind) Evidence {
	return Evidence{Strategy: kind, QueryHash: r.in.QueryHash, Candidates: []Candidate{}}
}

// entriesOf returns the input entries of kind, newest first: by turn, index
// and id (all descending, as stores order them), or for facts — which carry
// no turn in their id — by UpdatedAt, then id.
func (r reader) entriesOf(kind core.EntryKind) []core.Entry {
	var out []core.Entry
	for _, e := range r.in.Entries {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, func(a, b core.Entry) int {
		if kind == core.KindFact {
			if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
				return c
			}
			return cmp.Compare(b.ID, a.ID)
		}
		return core.CompareNewest(a, b)
	})
	return out
}

// readKind is the entry kind a non-ranking strategy reads on this memory.
func (r reader) readKind() core.EntryKind {
	switch r.m.Type {
	case core.Semantic:
		return core.KindFact
	case core.Narrative:
		return core.KindBeat
	case core.Causal:
		return core.KindSnapshot
	}
	return core.KindMessage
}

// window admits the newest `size` entries of the memory's kind; older ones
// are listed (capped) with over-max-entries. Prompt order is chronological.
func (r reader) window(s core.Strategy, skip map[string]bool) readResult {
	return r.recentWindow(s, "size", skip)
}

func (r reader) recentWindow(s core.Strategy, field string, skip map[string]bool) readResult {
	n, ok := s.Int(field)
	if !ok {
		n = 20
	}
	return r.newestN(s.Kind, r.readKind(), int(n), skip)
}

func (r reader) extract(s core.Strategy, skip map[string]bool) readResult {
	return r.newestN(s.Kind, r.readKind(), maxExtractRead, skip)
}

func (r reader) newestN(kind core.StrategyKind, ek core.EntryKind, n int, skip map[string]bool) readResult {
	entries := r.entriesOf(ek)
	choices := make([]choice, len(entries))
	admitted := 0
	for i, e := range entries {
		choices[i] = choice{e: e}
		switch {
		case skip[e.ID]:
			choices[i].reason = ReasonAlreadyAdmitted
		case admitted >= n:
			choices[i].reason = ReasonOverMaxEntries
		default:
			choices[i].admit = true
			admitted++
		}
	}
	ev := r.evidence(kind)
	ev.CorpusEmpty = len(entries) == 0
	return r.finish(ev, choices, chronological(choices), listedRejects)
}

// chronological returns the admitted choices' indices oldest first (the
// choices are newest first).
func chronological(choices []choice) []int {
	var out []int
	for i := len(choices) - 1; i >= 0; i-- {
		if choices[i].admit {
			out = append(out, i)
		}
	}
	return out
}

// budget admits the newest messages while each fits what is left of the
// token budget (an exact fit included) and maxEntries is not reached; the
// first that does not stops the walk, so the admitted messages are always
// the newest contiguous run. tokens(entry) = ceil(characters/4).
//
// A nil ContextTokensRemaining means the caller did not say: the decision is
// pick, limited by maxEntries only (20 when absent), and the note says so.
func (r reader) budget(s core.Strategy, skip map[string]bool) readResult {
	entries := r.entriesOf(core.KindMessage)
	ev := r.evidence(core.Budget)
	maxEntries, hasMax := s.Int("maxEntries")
	reserve, _ := s.Int("reserveTokens")
	minimum, _ := s.Int("minimumTokens")
	choices := make([]choice, len(entries))
	for i, e := range entries {
		choices[i] = choice{e: e}
	}
	switch {
	case len(entries) == 0:
		ev.Decision, ev.CorpusEmpty = DecisionSkipEmpty, true
		return r.finish(ev, choices, nil, listedRejects)
	case r.in.ContextTokensRemaining == nil:
		ev.Decision = DecisionPick
		limit := int64(unknownBudgetEntries)
		if hasMax {
			limit = maxEntries
		}
		ev.Note = fmt.Sprintf("contextTokensRemaining was not given, so the token budget is unknown: picked the newest %d messages by count only (maxEntries).", limit)
		admitted := int64(0)
		for i := range choices {
			switch {
			case skip[choices[i].e.ID]:
				choices[i].reason = ReasonAlreadyAdmitted
			case admitted >= limit:
				choices[i].reason = ReasonOverMaxEntries
			default:
				choices[i].admit = true
				admitted++
			}
		}
		return r.finish(ev, choices, chronological(choices), listedRejects)
	}
	budget := int64(*r.in.ContextTokensRemaining) - reserve
	if budget < minimum {
		ev.Decision = DecisionSkipNoBudget
		ev.Note = fmt.Sprintf("budget %d tokens (contextTokensRemaining %d − reserveTokens %d) is below minimumTokens %d: nothing injected.",
			budget, *r.in.ContextTokensRemaining, reserve, minimum)
		for i := range choices {
			choices[i].reason = ReasonOverBudget
		}
		return r.finish(ev, choices, nil, listedRejects)
	}
	ev.Decision = DecisionPick
	left := budget
	admitted := int64(0)
	stop := ""
	for i := range choices {
		c := &choices[i]
		if skip[c.e.ID] {
			c.reason = ReasonAlreadyAdmitted
			continue
		}
		if stop == "" && hasMax && admitted >= maxEntries {
			stop = ReasonOverMaxEntries
		}
		tokens := estimateTokens(messageContent(c.e))
		if stop == "" && tokens > left {
			stop = ReasonOverBudget
		}
		if stop != "" {
			c.reason = stop
			continue
		}
		c.admit = true
		admitted++
		left -= tokens
	}
	return r.finish(ev, choices, chronological(choices), listedRejects)
}

// estimateTokens is ceil(characters/4), the documented free estimate.
func estimateTokens(text string) int64 {
	return (int64(utf8.RuneCountInString(text)) + 3) / 4
}

// decay scores each message 2^(−age/halfLifeMs), age = Now − LastAccessedAt
// (never negative), and admits those scoring at least minScore. Candidates
// rank by score (ties newest first); prompt order is chronological. A
// halfLifeMs of 0 decays everything older than Now to 0 (an entry accessed
// exactly at Now scores 1).
func (r reader) decay(s core.Strategy, skip map[string]bool) readResult {
	entries := r.entriesOf(core.KindMessage)
	half, _ := s.Float("halfLifeMs")
	minScore, _ := s.Float("minScore")
	ev := r.evidence(core.Decay)
	ev.CorpusEmpty = len(entries) == 0
	choices := make([]choice, len(entries))
	for i, e := range entries {
		age := float64(r.in.Now.Sub(e.LastAccessedAt).Milliseconds())
		if age < 0 {
			age = 0
		}
		var score float64
		switch {
		case age == 0:
			score = 1
		case half <= 0:
			score = 0
		default:
			score = math.Exp2(-age / half)
		}
		c := choice{e: e, score: &score}
		switch {
		case score < minScore:
			c.reason = ReasonDecayed
		case skip[e.ID]:
			c.reason = ReasonAlreadyAdmitted
		default:
			c.admit = true
		}
		choices[i] = c
	}
	// Rank by score; the stable sort keeps newest first among equals.
	order := make([]int, len(choices))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(*choices[b].score, *choices[a].score) })
	ranked := make([]choice, len(choices))
	for rank, i := range order {
		ranked[rank] = choices[i]
	}
	// Prompt order: chronological, i.e. oldest first by the recency order.
	var prompt []int
	pos := make(map[int]int, len(order)) // recency index → rank index
	for rank, i := range order {
		pos[i] = rank
	}
	for i := len(choices) - 1; i >= 0; i-- {
		if choices[i].admit {
			prompt = append(prompt, pos[i])
		}
	}
	return r.finish(ev, ranked, prompt, listedRejects)
}

// topK admits the best `topK` ranked entries whose score is strictly above
// the threshold, in rank order (which is also prompt order). Further ones
// above the threshold are over-max-entries, the rest below-threshold; with
// maxChars, a fragment that would take the recall text (separators
// included) past maxChars characters is over-char-budget and the next one is
// tried. Entries with vectors of another space are listed as
// embedder-mismatch, unscored, after the ranked ones.
func (r reader) topK(s core.Strategy, skip map[string]bool) readResult {
	ev := r.evidence(core.TopK)
	part := r.partRanking()
	set := part.Settings
	if set.Ranking == "" { // a ranking read without resolved settings (a caller of ReadMemory's own)
		set = strategies.ResolveTopK(s, r.m, core.Capabilities{})
	}
	k, threshold := set.K, set.Threshold
	maxChars, hasMaxChars := s.Int("maxChars")
	ev.K, ev.Threshold = k, threshold
	ev.Ranking, ev.RankingSource = set.Ranking, set.RankingSource
	if set.Ranking == core.RankHybrid {
		alpha := set.Alpha
		ev.Alpha = &alpha
	}
	if threshold != nil {
		ev.ThresholdSource, ev.ThresholdOn = set.ThresholdSource, set.Ranking
	}
	ev.EmbedderID, ev.Dimensions = part.EmbedderID, part.Dimensions

	rk := part.Ranked
	var notes []string
	switch {
	case part.Unembeddable:
		// Nothing was searched: neither "empty" nor "complete" can be claimed.
		rk = &RankResult{Mode: "exact", Total: -1}
		notes = append(notes, fmt.Sprintf("the query has no words the embedder %q can represent (only punctuation, symbols or spaces), so nothing was ranked; send a query with words.", part.EmbedderID))
	case rk == nil:
		rk = &RankResult{}
		notes = append(notes, "no ranking was supplied for this read; nothing was compared.")
	}
	ev.SearchMode = rk.Mode
	var choices []choice
	admitted := 0
	used := int64(0)
	for _, sc := range rk.Ranked {
		score := sc.Score
		c := choice{e: sc.Entry, score: &score}
		if UsesVector(set.Ranking) {
			v := sc.Vector
			c.vector = &v
		}
		if UsesLexical(set.Ranking) {
			l := sc.Lexical
			c.lexical = &l
		}
		switch {
		case threshold != nil && !(score > *threshold):
			c.reason = ReasonBelowThreshold
			if ev.NearestMiss == nil || score > *ev.NearestMiss {
				miss := score
				ev.NearestMiss = &miss
			}
		case skip[sc.Entry.ID]:
			c.reason = ReasonAlreadyAdmitted
		case admitted >= k:
			c.reason = ReasonOverMaxEntries
		default:
			frag := r.fragment(&c)
			cost := int64(utf8.RuneCountInString(frag))
			if admitted == 0 {
				cost += int64(utf8.RuneCountInString(r.header(c.e))) + 1
			} else {
				cost += 2
			}
			if hasMaxChars && used+cost > maxChars {
				c.reason = ReasonOverCharBudget
				break
			}
			c.admit = true
			admitted++
			used += cost
		}
		choices = append(choices, c)
	}
	considered := max(rk.Total, len(rk.Ranked))
	if len(rk.Mismatched) > 0 {
		models := map[string]bool{}
		var names []string
		for _, e := range rk.Mismatched {
			choices = append(choices, choice{e: e, reason: ReasonEmbedderMismatch})
			name := fmt.Sprintf("%s@%d", cmp.Or(e.EmbeddingModel, "unknown"), len(e.Embedding))
			switch {
			case rk.Stored != nil:
				name = fmt.Sprintf("%s@%d", cmp.Or(rk.Stored.Model, "unknown"), rk.Stored.Dims)
			case e.Embedding == nil:
				name = cmp.Or(e.EmbeddingModel, "unknown")
			}
			if !models[name] {
				models[name] = true
				names = append(names, name)
			}
		}
		notes = append(notes, fmt.Sprintf("%d entries hold vectors of another embedder (%s) than this read's %s@%d and were not compared; re-embed them or read with their embedder.",
			len(rk.Mismatched), strings.Join(names, ", "), part.EmbedderID, part.Dimensions))
	}
	var prompt []int
	for i, c := range choices {
		if c.admit {
			prompt = append(prompt, i)
		}
	}
	ev.Note = strings.Join(notes, " ")
	res := r.finish(ev, choices, prompt, -1)
	res.ev.ConsideredCount = considered + len(rk.Mismatched)
	res.ev.RejectedCount = res.ev.ConsideredCount - res.ev.AdmittedCount
	// Total -1: an ANN search that did not count the corpus; never complete.
	res.ev.CandidatesComplete = rk.Total >= 0 && rk.Total <= len(rk.Ranked)
	res.ev.CorpusEmpty = rk.Total == 0 && len(rk.Ranked) == 0 && len(rk.Mismatched) == 0
	return res
}

// hybrid runs each part on the same input and composes them: the content is
// the parts' contents joined with "\n\n" (so the fragments, renumbered
// globally, still rebuild it byte for byte), the top-level candidates are
// the parts' candidates in part order with PromptPosition made global, and
// Parts keeps each part's own evidence (with part-local positions). An entry
// an earlier part admitted is listed by later parts as already-admitted.
func (r reader) hybrid(s core.Strategy, skip map[string]bool) readResult {
	ev := r.evidence(core.Hybrid)
	ev.Parts = []Evidence{}
	ev.CandidatesComplete, ev.CorpusEmpty = true, true
	seen := cloneSet(skip)
	var contents, admittedIDs []string
	offset := 0
	for _, p := range s.Parts {
		res := r.run(p, seen)
		for _, c := range res.ev.Candidates {
			if c.PromptPosition != nil {
				pos := *c.PromptPosition + offset
				c.PromptPosition = &pos
			}
			ev.Candidates = append(ev.Candidates, c)
		}
		offset += len(res.admitted)
		for _, id := range res.admitted {
			seen[id] = true
		}
		admittedIDs = append(admittedIDs, res.admitted...)
		if res.content != "" {
			contents = append(contents, res.content)
		}
		ev.ConsideredCount += res.ev.ConsideredCount
		ev.AdmittedCount += res.ev.AdmittedCount
		ev.RejectedCount += res.ev.RejectedCount
		ev.CandidatesComplete = ev.CandidatesComplete && res.ev.CandidatesComplete
		ev.CorpusEmpty = ev.CorpusEmpty && res.ev.CorpusEmpty
		ev.Parts = append(ev.Parts, res.ev)
	}
	return readResult{content: strings.Join(contents, "\n\n"), ev: ev, admitted: admittedIDs}
}

func cloneSet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// finish renders the admitted choices in prompt order (the header on the
// first fragment) and records every choice as a candidate in rank order.
// Rejected candidates past maxRejects are counted but not listed
// (maxRejects < 0: list all).
func (r reader) finish(ev Evidence, choices []choice, prompt []int, maxRejects int) readResult {
	frags := make(map[int]string, len(prompt))
	positions := make(map[int]int, len(prompt))
	var parts, ids []string
	for pos, i := range prompt {
		frag := r.fragment(&choices[i])
		if pos == 0 {
			frag = r.header(choices[i].e) + "\n" + frag
		}
		frags[i], positions[i] = frag, pos
		parts = append(parts, frag)
		ids = append(ids, choices[i].e.ID)
	}
	listed := 0
	complete := true
	for i, c := range choices {
		if c.admit {
			ev.AdmittedCount++
		} else {
			ev.RejectedCount++
			if maxRejects >= 0 && listed >= maxRejects {
				complete = false
				continue
			}
			listed++
		}
		cand := Candidate{ID: c.e.ID, MemoryID: r.m.ID, Score: c.score, VectorScore: c.vector, LexicalScore: c.lexical,
			Rank: i + 1, Admitted: c.admit, Reason: c.reason, Turn: cmp.Or(c.e.SourceTurn, c.e.Turn), ConversationID: c.e.SourceConversation}
		if c.admit {
			frag, pos := frags[i], positions[i]
			cand.PromptFragment, cand.PromptPosition = &frag, &pos
		}
		if c.e.Kind == core.KindDocument {
			d := choices[i].document()
			cand.DocURI, cand.Heading = d.DocURI, d.Heading
			if d.Page != nil && *d.Page != 0 {
				p := *d.Page
				cand.Page = &p
			}
		}
		ev.Candidates = append(ev.Candidates, cand)
	}
	ev.ConsideredCount = len(choices)
	if r.in.EntriesTruncated && ev.Strategy != core.TopK {
		complete = false
		ev.Note = strings.TrimSpace(ev.Note + fmt.Sprintf(" This memory holds more entries than one recall reads (%d, newest first); older ones were not considered.", maxRecallEntries))
	}
	ev.CandidatesComplete = complete
	return readResult{content: strings.Join(parts, "\n\n"), ev: ev, admitted: ids}
}

// docValue is a corpus chunk's stored value.
type docValue struct {
	Text    string `json:"text"`
	DocURI  string `json:"docUri"`
	Page    *int   `json:"page"`
	Heading string `json:"heading"`
}

func decodeDoc(e core.Entry) docValue {
	var d docValue
	if core.DecodeValue(e.Value, &d) != nil {
		d.Text = string(e.Value)
	}
	return d
}

func messageContent(e core.Entry) string {
	var m core.Message
	if core.DecodeValue(e.Value, &m) != nil {
		return string(e.Value)
	}
	return m.Content
}

// summarize reads what the fold left: the stored summaries (oldest first),
// then the messages no summary covers — after a fold, the verbatim tail —
// at most `size` of them, newest kept. The fold itself (a model call and a
// write) runs in the service before this pure read; see Service.fold.
func (r reader) summarize(s core.Strategy, skip map[string]bool) readResult {
	var choices []choice
	var prompt []int
	sums := summaries(r.in.Entries)
	for i := len(sums) - 1; i >= 0; i-- { // newest first, like every ranking here
		if sums[i].v.Refused {
			continue
		}
		c := choice{e: sums[i].e, admit: !skip[sums[i].e.ID]}
		if !c.admit {
			c.reason = ReasonAlreadyAdmitted
		}
		choices = append(choices, c)
	}
	for i := len(choices) - 1; i >= 0; i-- {
		if choices[i].admit {
			prompt = append(prompt, i)
		}
	}
	limit, _ := s.Int("size")
	msgs := uncoveredMessages(r.in.Entries)
	first := len(choices)
	admitted := int64(0)
	for i := len(msgs) - 1; i >= 0; i-- {
		c := choice{e: msgs[i]}
		switch {
		case skip[msgs[i].ID]:
			c.reason = ReasonAlreadyAdmitted
		case admitted >= limit:
			c.reason = ReasonOverMaxEntries
		default:
			c.admit = true
			admitted++
		}
		choices = append(choices, c)
	}
	for i := len(choices) - 1; i >= first; i-- {
		if choices[i].admit {
			prompt = append(prompt, i)
		}
	}
	ev := r.evidence(core.Summarize)
	ev.CorpusEmpty = len(choices) == 0
	return r.finish(ev, choices, prompt, listedRejects)
}

// principalOnly is the scope a recall records: principal, or "" for a conversation's memory
// (what every receipt said before scopes existed).
func principalOnly(s core.MemoryScope) core.MemoryScope {
	if s == core.ScopePrincipal {
		return s
	}
	return ""
}
