package turns

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

// writeSide is what one memory writes for a turn.
type writeSide struct {
	mem       core.Memory
	messages  bool // msg-{turn}-{i}
	embed     bool // ...with embeddings (semantic topK)
	facts     bool // fact:{key}
	beats     bool // beat-{turn}-{i}
	snapshot  bool // snap-{turn}
	embedder  string
	minConf   float64
	perTurn   int
	extractor string
}

// planWrite decides a memory's write side from its type × strategy, or
// returns the reason it writes nothing.
func planWrite(m core.Memory, caps core.Capabilities) (writeSide, string) {
	if m.ReadOnly {
		return writeSide{}, "read-only"
	}
	if m.Corpus {
		return writeSide{}, "corpus"
	}
	w := writeSide{mem: m, minConf: 0, perTurn: 10, extractor: "pattern"}
	kinds := map[core.StrategyKind]core.Strategy{}
	var walk func(s core.Strategy)
	walk = func(s core.Strategy) {
		if _, seen := kinds[s.Kind]; !seen {
			kinds[s.Kind] = s
		}
		for _, p := range s.Parts {
			walk(p)
		}
	}
	walk(m.Strategy)
	if ex, ok := kinds[core.Extract]; ok {
		w.minConf, _ = ex.Float("minConfidence")
		if n, ok := ex.Int("maxPerTurn"); ok {
			w.perTurn = int(n)
		}
		w.extractor = ex.Str("extractor")
	}
	switch m.Type {
	case core.Episodic:
		w.messages = true
	case core.Semantic:
		if tk, ok := kinds[core.TopK]; ok {
			w.messages, w.embed = true, true
			w.embedder = strategies.EmbedderFor(tk, m, caps)
		}
		_, hasExtract := kinds[core.Extract]
		_, hasWindow := kinds[core.Window]
		w.facts = hasExtract || hasWindow
	case core.Narrative:
		w.beats = true
	case core.Causal:
		w.snapshot = true
		w.embedder = strategies.EmbedderFor(kinds[core.TopK], m, caps)
	}
	return w, ""
}

// vectorSet holds the vectors of one turn, computed before the write
// transaction (the transaction does no I/O but the database's).
type vectorSet struct {
	model    string
	query    []float32
	messages [][]float32 // index-aligned with the turn's messages; nil: none
}

// PostTurn is the write side of every writing memory of the tenant (or of
// those named): it resolves the turn number once, inside the store's
// transaction, and writes messages, snapshots, facts and beats together.
//
// A turn with no messages, or no user message, writes nothing, consumes no
// turn number and says so in TurnResult.Noop.
func (s *Service) PostTurn(ctx context.Context, p TurnParams) (TurnResult, error) {
	r, err := s.postTurn(ctx, p)
	if err == nil {
		s.observe(r)
	}
	return r, err
}

func (s *Service) postTurn(ctx context.Context, p TurnParams) (TurnResult, error) {
	if err := validateTurn(p); err != nil {
		return TurnResult{}, err
	}
	if len(p.Messages) == 0 {
		return s.claimNoop(ctx, p, noop("no-messages", "The turn has no messages, so nothing was written and no turn number was used."))
	}
	query, hasUser := firstWithRole(p.Messages, "user")
	if !hasUser {
		return s.claimNoop(ctx, p, noop("no-user-message", "The turn has no user message, so there is no question to remember: nothing was written and no turn number was used."))
	}
	tenant := p.Identity.Tenant
	all, err := s.defs.Memories(ctx, tenant)
	if err != nil {
		return TurnResult{}, err
	}
	named := map[string]bool{}
	for _, id := range p.Memories {
		named[id] = true
	}
	byID := map[string]bool{}
	for _, m := range all {
		byID[m.ID] = true
	}
	for _, id := range p.Memories {
		if !byID[id] {
			return TurnResult{}, &core.NotFoundError{What: "memory", ID: id}
		}
	}

	result := TurnResult{Written: []WrittenIDs{}, Skipped: []SkippedWrite{}}
	var sides []writeSide
	countMessages, countBeats := false, false
	for _, m := range all {
		if len(named) > 0 && !named[m.ID] {
			result.Skipped = append(result.Skipped, SkippedWrite{MemoryID: m.ID, Reason: "not-named"})
			continue
		}
		side, reason := planWrite(m, s.caps)
		if reason != "" {
			result.Skipped = append(result.Skipped, SkippedWrite{MemoryID: m.ID, Reason: reason})
			continue
		}
		if m.PrincipalScoped() && p.Identity.Principal == "" {
			// A principal-scoped memory keeps what it learns about an end user: a turn that
			// names none has nobody to remember it for.
			detail := fmt.Sprintf("memory %q is principal-scoped (it keeps entries per end user, across their conversations) and this turn names no principal, so it has nobody to write for. Send the turn with ?principal=<user id>.", m.ID)
			if named[m.ID] {
				return TurnResult{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "postTurn", Path: "principal", Detail: detail, Fix: "user-42"}
			}
			result.Skipped = append(result.Skipped, SkippedWrite{MemoryID: m.ID, Reason: "no-principal", Detail: detail})
			continue
		}
		if !m.PrincipalScoped() {
			// Only the conversation's own entries number its turns; a principal's live in
			// another namespace, and turn numbers stay per conversation.
			countMessages = countMessages || side.messages
			countBeats = countBeats || side.beats
		}
		sides = append(sides, side)
	}
	// A snapshot is found by its query's vector: a first user message without words (an emoji,
	// "?") has none, so no snapshot is written for it, as the seed writes none for an empty
	// query. Client vectors are the client's call.
	if p.Embeddings == nil && !core.HasWords(query) {
		kept := sides[:0]
		for _, side := range sides {
			if side.snapshot {
				result.Skipped = append(result.Skipped, SkippedWrite{MemoryID: side.mem.ID, Reason: "query-without-words",
					Detail: "the turn's first user message has no words to embed, so no causal snapshot was written: a snapshot is recalled by its question's vector."})
				continue
			}
			kept = append(kept, side)
		}
		sides = kept
	}
	if len(sides) == 0 {
		r := noop("no-writing-memory", "No memory of this tenant writes this turn (`skipped` says why for each), so nothing was written and no turn number was used. Define a memory that writes turns, e.g. {\"id\":\"chat\",\"type\":\"episodic\",\"strategy\":{\"kind\":\"window\"}}.")
		r.Skipped = result.Skipped
		return s.claimNoop(ctx, p, r)
	}

	vectors, err := s.turnVectors(ctx, p, sides, query)
	if err != nil {
		return TurnResult{}, err
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	memoryIDs := make([]string, len(all))
	for i, m := range all {
		memoryIDs[i] = m.ID
	}
	var fingerprints []core.Fingerprint
	for _, side := range sides {
		if v, ok := vectors[side.embedder]; ok && (side.embed || side.snapshot) {
			dims := len(v.query)
			for _, mv := range v.messages {
				if mv != nil {
					dims = len(mv)
					break
				}
			}
			if dims > 0 {
				fp := core.Fingerprint{MemoryID: side.mem.ID, Model: v.model, Dims: dims}
				if side.mem.PrincipalScoped() {
					fp.Namespace = p.Identity.PrincipalNamespace()
				}
				fingerprints = append(fingerprints, fp)
			}
		}
	}

	// Pattern extraction is pure CPU: run it once per turn, and only when a
	// memory keeps facts or beats. LLM extraction is I/O: it runs here, per
	// memory, before the transaction.
	var facts []core.Fact
	var beats []core.Beat
	llmFacts := map[string][]core.Fact{}
	llmBeats := map[string][]core.Beat{}
	for _, side := range sides {
		if (side.facts || side.beats) && side.extractor == "llm" {
			f, b, note := s.llmExtract(ctx, side, p.Messages)
			llmFacts[side.mem.ID], llmBeats[side.mem.ID] = f, b
			result.Extraction = append(result.Extraction, note)
			continue
		}
		if side.facts && facts == nil {
			facts = ExtractFacts(p.Messages, 0, 100)
		}
		if side.beats && beats == nil {
			beats = ExtractBeats(p.Messages, 0, 100)
		}
	}
	build := func(turn int) ([]core.Entry, error) {
		if turn > maxStoredTurn {
			return nil, turnRefusal("turnNumber", core.CodeInvalidField, fmt.Sprintf("this conversation already holds turn %d, the highest turn "+
				"number there is, so no later turn can be written to it. Use a new conversation id, or forget this one "+
				"(DELETE /v1/conversations/{conversationId}) to number from 1 again.", maxStoredTurn), nil)
		}
		var out []core.Entry
		for _, side := range sides {
			f, b := facts, beats
			if side.extractor == "llm" {
				f, b = llmFacts[side.mem.ID], llmBeats[side.mem.ID]
			}
			out = append(out, s.entriesFor(side, p, turn, now, query, vectors[side.embedder], f, b)...)
		}
		return out, nil
	}
	var fpMemories, principalFPs []string
	principal := ""
	for _, side := range sides {
		if side.mem.PrincipalScoped() {
			principal = p.Identity.PrincipalNamespace()
		}
	}
	for _, f := range fingerprints {
		if f.Namespace != "" {
			principalFPs = append(principalFPs, f.MemoryID)
		} else {
			fpMemories = append(fpMemories, f.MemoryID)
		}
	}
	w := TurnWrite{
		Tenant:                       tenant,
		Namespace:                    p.Identity.Namespace(),
		Scope:                        TurnScope{MemoryIDs: memoryIDs, Kinds: CountedKinds(countMessages, countBeats), Shared: sharedScope(all, p.Identity, s.caps)},
		FingerprintMemories:          fpMemories,
		PrincipalNamespace:           principal,
		PrincipalFingerprintMemories: principalFPs,
		Now:                          now,
		Decide:                       Decider(NormalizeHostTurn(p.TurnNumber), fingerprints, build),
		LinkRunID:                    p.RunID,
		LinkRecallIDs:                p.RecallIDs,
	}
	if p.IdempotencyKey != "" {
		w.Idempotency = &IdempotencyClaim{Key: p.IdempotencyKey, RequestHash: requestHash(p), ExpiresAt: now.Add(s.keyTTL)}
		w.Respond = func(turn int, written []core.Entry) ([]byte, error) {
			return json.Marshal(finish(result, turn, written, sides))
		}
	}
	out, err := s.store.WriteTurn(ctx, w)
	if err != nil {
		if errors.Is(err, ErrKeyReused) {
			return TurnResult{}, keyReused()
		}
		var way *EntryInTheWay
		if errors.As(err, &way) {
			what := "an entry this turn writes"
			if way.EntryID != "" {
				what = fmt.Sprintf("entry %q of memory %q", way.EntryID, way.MemoryID)
			}
			return TurnResult{}, &core.ConflictError{Code: core.CodeEntryExists,
				Detail: what + " is already stored and live, and only facts are replaced. Send a later `turnNumber`, or leave it out to write the next turn."}
		}
		var fm *core.FingerprintMismatch
		if errors.As(err, &fm) {
			where := "in this conversation"
			for _, side := range sides {
				if side.mem.ID == fm.MemoryID && side.mem.PrincipalScoped() {
					where = "for this principal"
				}
			}
			return TurnResult{}, &core.ValidationError{Code: core.CodeEmbedderMismatch, Site: "postTurn", Path: "embeddings",
				Detail: fmt.Sprintf("memory %q already holds %s vectors of %d dimensions %s; this turn brings %s vectors of %d. Vectors of different models or dimensions are never compared: use the same embedder, or a new memory.",
					fm.MemoryID, fm.HaveModel, fm.HaveDims, where, fm.GotModel, fm.GotDims),
				Extra: map[string]any{"memoryId": fm.MemoryID, "have": fmt.Sprintf("%s@%d", fm.HaveModel, fm.HaveDims), "got": fmt.Sprintf("%s@%d", fm.GotModel, fm.GotDims)}}
		}
		return TurnResult{}, err
	}
	if out.Replay != nil {
		return replayed(out.Replay)
	}
	return finish(result, out.Turn, out.Entries, sides), nil
}

// sharedScope is what of the conversation's turns lives in its principal's namespace, kept by
// the tenant's principal-scoped memories (nil when the conversation has no principal or the
// tenant no such memory): those turns number the conversation too, whether or not this turn
// writes them.
func sharedScope(all []core.Memory, id core.Identity, caps core.Capabilities) *SharedScope {
	if id.Principal == "" {
		return nil
	}
	sh := &SharedScope{Namespace: id.PrincipalNamespace(), Conversation: id.ConversationID}
	messages, beats := false, false
	for _, m := range all {
		if !m.PrincipalScoped() {
			continue
		}
		side, reason := planWrite(m, caps)
		if reason != "" {
			continue
		}
		sh.MemoryIDs = append(sh.MemoryIDs, m.ID)
		messages, beats = messages || side.messages, beats || side.beats
	}
	if len(sh.MemoryIDs) == 0 {
		return nil
	}
	sh.Kinds = CountedKinds(messages, beats)
	return sh
}

// CountedKinds are the entry kinds that count toward a namespace's highest live turn for a
// turn that writes messages (writesMessages) and beats (writesBeats): snap-{n} always, as
// the seed counts; msg-{n}-* and beat-{n}-* when the turn writes them too, so that it can
// never collide with a live message or beat of an earlier turn.
func CountedKinds(writesMessages, writesBeats bool) []core.EntryKind {
	kinds := []core.EntryKind{core.KindSnapshot}
	if writesMessages {
		kinds = append(kinds, core.KindMessage)
	}
	if writesBeats {
		kinds = append(kinds, core.KindBeat)
	}
	return kinds
}

// finish groups the written entries per memory, in the order written, and
// reports writing memories that produced nothing (no facts found, say).
func finish(r TurnResult, turn int, written []core.Entry, sides []writeSide) TurnResult {
	r.Turn = turn
	r.Skipped = slices.Clone(r.Skipped)
	r.Written = []WrittenIDs{}
	index := map[string]int{}
	for _, e := range written {
		i, ok := index[e.MemoryID]
		if !ok {
			i = len(r.Written)
			index[e.MemoryID] = i
			r.Written = append(r.Written, WrittenIDs{MemoryID: e.MemoryID, IDs: []string{}})
		}
		r.Written[i].IDs = append(r.Written[i].IDs, e.ID)
	}
	for _, side := range sides {
		if _, ok := index[side.mem.ID]; !ok {
			r.Skipped = append(r.Skipped, SkippedWrite{MemoryID: side.mem.ID, Reason: "nothing-to-write",
				Detail: "this turn held nothing this memory extracts (no facts or beats matched)"})
		}
	}
	return r
}

// claimNoop answers a turn that writes nothing. With an Idempotency-Key, the key is claimed
// for it all the same (a write of no entries, in the store's transaction), so that the key
// keeps its promise: a retry of the same request replays this answer, and the key sent with a
// different request is refused, as after any other answer.
func (s *Service) claimNoop(ctx context.Context, p TurnParams, r TurnResult) (TurnResult, error) {
	if p.IdempotencyKey == "" {
		return r, nil
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	out, err := s.store.WriteTurn(ctx, TurnWrite{
		Tenant: p.Identity.Tenant, Namespace: p.Identity.Namespace(), Scope: TurnScope{MemoryIDs: []string{}}, Now: now,
		Decide:      func(TurnFacts) (TurnDecision, error) { return TurnDecision{Turn: 1}, nil },
		Idempotency: &IdempotencyClaim{Key: p.IdempotencyKey, RequestHash: requestHash(p), ExpiresAt: now.Add(s.keyTTL)},
		Respond:     func(int, []core.Entry) ([]byte, error) { return json.Marshal(r) },
	})
	switch {
	case errors.Is(err, ErrKeyReused):
		return TurnResult{}, keyReused()
	case err != nil:
		return TurnResult{}, err
	case out.Replay != nil:
		return replayed(out.Replay)
	}
	return r, nil
}

// replayed decodes the answer stored with an Idempotency-Key, for its retry.
func replayed(stored []byte) (TurnResult, error) {
	var r TurnResult
	if err := json.Unmarshal(stored, &r); err != nil {
		return TurnResult{}, fmt.Errorf("decode stored idempotent response: %w", err)
	}
	r.Replayed = true
	return r, nil
}

func keyReused() error {
	return &core.ValidationError{Code: core.CodeIdempotencyKeyReused, Site: "postTurn", Path: "Idempotency-Key",
		Detail: "this Idempotency-Key was already used with a different request; a retry must send the same body to the same conversation, or use a new key.",
		See:    "/openapi.yaml"}
}

func noop(reason, detail string) TurnResult {
	return TurnResult{Written: []WrittenIDs{}, Skipped: []SkippedWrite{}, Noop: &TurnNoop{Reason: reason, Detail: detail}}
}

// turnVectors computes the vectors each embedder id needs, once per text.
// Client vectors, when sent, stand for every embedder of the turn.
func (s *Service) turnVectors(ctx context.Context, p TurnParams, sides []writeSide, query string) (map[string]*vectorSet, error) {
	out := map[string]*vectorSet{}
	for _, side := range sides {
		if !side.embed && !side.snapshot {
			continue
		}
		set, ok := out[side.embedder]
		if !ok {
			set = &vectorSet{}
			out[side.embedder] = set
		}
		if ce := p.Embeddings; ce != nil {
			set.model = ce.Model
			if side.snapshot {
				if ce.Query == nil {
					return nil, turnRefusal("embeddings.query", core.CodeInvalidVector,
						fmt.Sprintf("memory %q is causal: with client vectors it needs `embeddings.query`, the vector of the turn's first user message.", side.mem.ID), nil)
				}
				set.query = normalize(ce.Query)
			}
			if side.embed {
				if ce.Messages == nil {
					return nil, turnRefusal("embeddings.messages", core.CodeInvalidVector,
						fmt.Sprintf("memory %q ranks messages by their vectors: with client vectors it needs `embeddings.messages`, one vector per message in `messages` order (null for a message that should not be ranked).", side.mem.ID), nil)
				}
				set.messages = make([][]float32, len(p.Messages))
				for i, v := range ce.Messages {
					if v != nil {
						set.messages[i] = normalize(v)
					}
				}
			}
			continue
		}
		emb, ok := s.embedders[side.embedder]
		if !ok {
			return nil, turnRefusal("memories", core.CodeMissingRequirement,
				fmt.Sprintf("memory %q needs the embedder %q, which this server no longer has; configure it again or send client vectors.", side.mem.ID, side.embedder), nil)
		}
		set.model = emb.Info().Model
		if side.snapshot && set.query == nil {
			vs, err := emb.Embed(ctx, []string{query})
			if err != nil {
				return nil, core.EmbedError(err, "postTurn", "messages", side.embedder)
			}
			set.query = vs[0]
		}
		if side.embed && set.messages == nil {
			set.messages = make([][]float32, len(p.Messages))
			var texts []string
			var at []int
			for i, m := range p.Messages {
				if core.HasWords(m.Content) {
					texts = append(texts, m.Content)
					at = append(at, i)
				}
			}
			if len(texts) > 0 {
				vs, err := emb.Embed(ctx, texts)
				if err != nil {
					return nil, core.EmbedError(err, "postTurn", "messages", side.embedder)
				}
				for j, i := range at {
					set.messages[i] = vs[j]
				}
			}
		}
	}
	return out, nil
}

// entriesFor builds one memory's entries for the resolved turn.
func (s *Service) entriesFor(side writeSide, p TurnParams, turn int, now time.Time, query string, vec *vectorSet, facts []core.Fact, beats []core.Beat) []core.Entry {
	m := side.mem
	namespace := p.Identity.NamespaceFor(m)
	base := func(id string, kind core.EntryKind, t, idx int, value any) core.Entry {
		v, _ := json.Marshal(value) // plain data: always marshals
		e := core.Entry{
			Tenant: p.Identity.Tenant, MemoryID: m.ID, Namespace: namespace,
			ID: id, Kind: kind, Turn: t, Index: idx, Value: v, Metadata: json.RawMessage(`{}`),
			Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now,
			Tier: m.Tier, SourceTurn: turn, SourceRunID: p.RunID,
		}
		if m.PrincipalScoped() {
			// The principal's namespace holds every conversation's entries: an entry says which
			// wrote it, and a turn's own ids carry the conversation so that two never collide.
			e.SourceConversation = p.Identity.ConversationID
			if kind != core.KindFact {
				e.ID = core.ScopedEntryID(id, p.Identity.ConversationID)
			}
		}
		if m.TTLMs > 0 {
			e.ExpiresAt = now.Add(time.Duration(m.TTLMs) * time.Millisecond)
		}
		return e
	}
	var out []core.Entry
	if side.messages {
		for i, msg := range p.Messages {
			e := base(fmt.Sprintf("msg-%d-%d", turn, i), core.KindMessage, turn, i, msg)
			if side.embed && vec != nil && vec.messages[i] != nil {
				e.Embedding, e.EmbeddingModel = vec.messages[i], vec.model
				e.Lexical = core.LexicalOf(msg.Content) // ranked by its content, as its vector
			}
			out = append(out, e)
		}
	}
	if side.snapshot {
		final, _ := firstWithRole(p.Messages, "assistant")
		// What the agent reported, and the names of what it did not: never zeros for
		// figures nobody reported.
		snap := core.Snapshot{Query: query, FinalContent: final, Unreported: p.Evidence.Unreported()}
		if ev := p.Evidence; ev != nil {
			snap.Decisions, snap.ToolCalls = ev.Decisions, ev.ToolCalls
			if ev.Iterations != nil {
				snap.Iterations = *ev.Iterations
			}
			if ev.DurationMs != nil {
				snap.DurationMs = *ev.DurationMs
			}
			if ev.TokenUsage != nil {
				snap.TokenUsage = *ev.TokenUsage
			}
		}
		e := base(fmt.Sprintf("snap-%d", turn), core.KindSnapshot, turn, 0, snap)
		if vec != nil {
			e.Embedding, e.EmbeddingModel = vec.query, vec.model
			e.Lexical = core.LexicalOf(query) // recalled by its question, as its vector
		}
		out = append(out, e)
	}
	if side.facts {
		n := 0
		for _, f := range facts {
			if f.Confidence < side.minConf || n >= side.perTurn {
				continue
			}
			n++
			out = append(out, base("fact:"+f.Key, core.KindFact, 0, 0, f))
		}
	}
	if side.beats {
		n := 0
		for _, b := range beats {
			if b.Confidence < side.minConf || n >= side.perTurn {
				continue
			}
			out = append(out, base(fmt.Sprintf("beat-%d-%d", turn, n), core.KindBeat, turn, n, b))
			n++
		}
	}
	return out
}

// ListEntries returns a page of the conversation's live entries, newest
// first, and the position of the next page ("" when none).
func (s *Service) ListEntries(ctx context.Context, q core.EntryQuery) ([]core.Entry, string, error) {
	q.Now = s.now().UTC()
	return s.store.ListEntries(ctx, q)
}

// GetEntry returns one live entry of the conversation and records the
// access (AccessCount, LastAccessedAt). ErrNotFound otherwise.
func (s *Service) GetEntry(ctx context.Context, id core.Identity, memoryID, entryID string) (core.Entry, error) {
	e, err := s.store.GetEntry(ctx, id.Tenant, id.Namespace(), memoryID, entryID, true, s.now().UTC().Truncate(time.Microsecond))
	if errors.Is(err, core.ErrNotFound) {
		return core.Entry{}, core.InConversation("entry", entryID, id)
	}
	return e, err
}

// ForgetConversation erases the conversation's namespace in every memory, in one
// transaction, and returns how many entries went and, when the conversation belongs to a
// principal, how many entries of principal-scoped memories written from it were kept: they are
// the principal's, not the conversation's (ForgetPrincipal erases them).
func (s *Service) ForgetConversation(ctx context.Context, id core.Identity) (erased, kept int64, err error) {
	if erased, err = s.store.ForgetNamespace(ctx, id.Tenant, id.Namespace()); err != nil {
		return 0, 0, err
	}
	if id.Principal != "" {
		if kept, err = s.store.CountWrittenFrom(ctx, id.Tenant, id.PrincipalNamespace(), id.ConversationID, s.now().UTC()); err != nil {
			return 0, 0, err
		}
	}
	return erased, kept, nil
}

// ListPrincipalEntries returns a page of what the principal-scoped memories know about the
// identity's principal, newest first, and the position of the next page ("" when none).
// q.Namespace is ignored: it is the principal's.
func (s *Service) ListPrincipalEntries(ctx context.Context, id core.Identity, q core.EntryQuery) ([]core.Entry, string, error) {
	if id.Principal == "" {
		return nil, "", &core.ValidationError{Code: core.CodeInvalidField, Site: "listPrincipalEntries", Path: "principal", Detail: "a principal id is needed.", Fix: "user-42"}
	}
	q.Tenant, q.Namespace, q.Now = id.Tenant, id.PrincipalNamespace(), s.now().UTC()
	return s.store.ListEntries(ctx, q)
}

// ForgetPrincipal forgets the identity's principal everywhere in the tenant: every
// conversation of theirs and every principal-scoped memory's entries about them, with the audit
// records kept of them (a right-to-erasure request), in one transaction.
func (s *Service) ForgetPrincipal(ctx context.Context, id core.Identity) (ForgetReport, error) {
	if id.Principal == "" {
		return ForgetReport{}, &core.ValidationError{Code: core.CodeInvalidField, Site: "forgetPrincipal", Path: "principal", Detail: "a principal id is needed.", Fix: "user-42"}
	}
	return s.store.ForgetPrincipal(ctx, id.Tenant, id.Principal, id.PrincipalNamespace(), id.ConversationsPrefix())
}
