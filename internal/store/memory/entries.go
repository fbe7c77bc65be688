package memory

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/turns"
)

var _ turns.Store = (*Store)(nil)

// entryStore is the entries half of Store. Locking has two levels, always taken in this
// order: a per-namespace mutex that serialises turn writes and forgets of one namespace (as
// the Postgres store's conversations row lock does), then mu for the maps themselves, held
// only for the duration of a read or an update, never while Build runs.
type entryStore struct {
	locksMu sync.Mutex
	// locks maps a namespace to its turn-write mutex. Entries are never removed: a waiter may
	// hold the pointer, and deleting it would let a second mutex exist for the namespace.
	locks map[nsKey]*sync.Mutex

	mu sync.RWMutex
	// entries maps a namespace to its entries by (memory, id).
	entries map[nsKey]map[entryKey]core.Entry
	// fingerprints maps a namespace to each memory's first (model, dims);
	// guarded by mu, written under the namespace lock.
	fingerprints map[nsKey]map[string]core.Fingerprint

	// recalls maps (tenant, recall id) to a stored receipt's JSON; guarded by mu.
	recalls map[[2]string][]byte

	keysMu sync.Mutex
	// keys maps (tenant, idempotency key) to its claim.
	keys map[[2]string]*claim
}

// claim is an idempotency key's state. done is closed once the claiming
// write finished; failed says it wrote nothing (the key is free again).
type claim struct {
	hash     []byte
	response []byte
	expires  time.Time
	done     chan struct{}
	failed   bool
}

type nsKey struct{ tenant, namespace string }

type entryKey struct{ memoryID, id string }

func (s *Store) nsLock(k nsKey) *sync.Mutex {
	s.es.locksMu.Lock()
	defer s.es.locksMu.Unlock()
	if s.es.locks == nil {
		s.es.locks = make(map[nsKey]*sync.Mutex)
	}
	m, ok := s.es.locks[k]
	if !ok {
		m = new(sync.Mutex)
		s.es.locks[k] = m
	}
	return m
}

// live reports whether e is visible at now.
func live(e core.Entry, now time.Time) bool {
	return e.ExpiresAt.IsZero() || e.ExpiresAt.After(now)
}

// WriteTurn holds the namespace's mutex throughout, reads the highest live turn of w.Scope and
// the stored fingerprints, and writes what w.Decide decides, with the same rules as the
// Postgres store: new entries get version 1 and zero timestamps set to w.Now; facts upsert
// (version+1, created_at and access bookkeeping kept); any other entry that would overwrite a
// live one fails the whole write with a *turns.EntryInTheWay; an expired entry is replaced as
// if absent. Decide's error is returned unchanged, with nothing written.
func (s *Store) WriteTurn(ctx context.Context, w turns.TurnWrite) (turns.TurnOutcome, error) {
	if w.Idempotency == nil {
		turn, out, _, err := s.writeTurn(ctx, w)
		if err != nil {
			return turns.TurnOutcome{}, err
		}
		return turns.TurnOutcome{Turn: turn, Entries: out}, nil
	}
	c, replay, err := s.claimKey(ctx, w.Tenant, *w.Idempotency, normalise(w.Now))
	if err != nil || replay != nil {
		return turns.TurnOutcome{Replay: replay}, err
	}
	turn, out, response, err := s.writeTurn(ctx, w)
	s.es.keysMu.Lock()
	if err != nil {
		c.failed = true
		delete(s.es.keys, [2]string{w.Tenant, w.Idempotency.Key})
	} else {
		c.response = response
	}
	close(c.done)
	s.es.keysMu.Unlock()
	if err != nil {
		return turns.TurnOutcome{}, err
	}
	return turns.TurnOutcome{Turn: turn, Entries: out}, nil
}

// inOnce runs do under once's idempotency claim (none when once is nil), as WriteTurn does for
// turns: a committed claim of the same request makes do not run and sets once.Replay; another
// request's is core.ErrKeyReused; a claim in flight is waited for. do's error frees the key.
func (s *Store) inOnce(ctx context.Context, tenant string, once *core.Once, do func() error) error {
	if once == nil {
		return do()
	}
	once.Replay = nil
	c, replay, err := s.claimKey(ctx, tenant, once.Claim, normalise(once.Now))
	if err != nil {
		return err
	}
	if replay != nil {
		once.Replay = replay
		return nil
	}
	err = do()
	s.es.keysMu.Lock()
	if err != nil {
		c.failed = true
		delete(s.es.keys, [2]string{tenant, once.Claim.Key})
	} else {
		c.response = slices.Clone(once.Response)
	}
	close(c.done)
	s.es.keysMu.Unlock()
	return err
}

// claimKey claims an idempotency key, or waits for the write holding it and
// returns that write's response (ErrKeyReused for another request).
func (s *Store) claimKey(ctx context.Context, tenant string, ic turns.IdempotencyClaim, now time.Time) (*claim, []byte, error) {
	k := [2]string{tenant, ic.Key}
	for {
		s.es.keysMu.Lock()
		if s.es.keys == nil {
			s.es.keys = make(map[[2]string]*claim)
		}
		c, ok := s.es.keys[k]
		if ok && !c.expires.After(now) && isClosed(c.done) {
			delete(s.es.keys, k)
			ok = false
		}
		if !ok {
			// Expiry is kept at Postgres's precision, as now is, so both stores agree on
			// when a claim expires.
			c = &claim{hash: slices.Clone(ic.RequestHash), expires: normalise(ic.ExpiresAt), done: make(chan struct{})}
			s.es.keys[k] = c
			s.es.keysMu.Unlock()
			return c, nil, nil
		}
		s.es.keysMu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		if c.failed {
			continue
		}
		if !bytes.Equal(c.hash, ic.RequestHash) {
			return nil, nil, turns.ErrKeyReused
		}
		if c.response == nil {
			// Committed without a response (no Respond): nothing to replay, and
			// writing again would repeat the turn. Refused, as the Postgres store does.
			return nil, nil, turns.ErrKeyReused
		}
		return nil, slices.Clone(c.response), nil
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// writeTurn is WriteTurn without the idempotency claim; it returns the
// response rendered by w.Respond (nil without one).
func (s *Store) writeTurn(ctx context.Context, w turns.TurnWrite) (int, []core.Entry, []byte, error) {
	if err := ctx.Err(); err != nil {
		return 0, nil, nil, err
	}
	k := nsKey{w.Tenant, w.Namespace}
	lock := s.nsLock(k)
	lock.Lock()
	defer lock.Unlock()
	pk := nsKey{w.Tenant, w.PrincipalNamespace}
	if w.PrincipalNamespace != "" {
		// After the conversation's, as every writer takes them.
		plock := s.nsLock(pk)
		plock.Lock()
		defer plock.Unlock()
	}
	if err := ctx.Err(); err != nil {
		return 0, nil, nil, err
	}

	// Compared at Postgres's precision, so both stores agree on what is live at an instant.
	now := normalise(w.Now)
	s.es.mu.RLock()
	facts := turns.TurnFacts{Fingerprints: map[string]core.Fingerprint{}}
	for _, e := range s.es.entries[k] {
		if w.Scope.Counts(e, now) {
			facts.Highest = max(facts.Highest, e.Turn)
		}
	}
	if sh := w.Scope.Shared; sh != nil {
		for _, e := range s.es.entries[nsKey{w.Tenant, sh.Namespace}] {
			if w.Scope.CountsShared(e, now) {
				facts.Highest = max(facts.Highest, e.Turn)
			}
		}
	}
	for _, id := range w.FingerprintMemories {
		if f, ok := s.es.fingerprints[k][id]; ok {
			facts.Fingerprints[id] = f
		}
	}
	for _, id := range w.PrincipalFingerprintMemories {
		if f, ok := s.es.fingerprints[pk][id]; ok {
			facts.Fingerprints[id] = f
		}
	}
	s.es.mu.RUnlock()

	d, err := w.Decide(facts)
	if err != nil {
		return 0, nil, nil, err
	}
	turn := d.Turn
	toWrite := make([]core.Entry, 0, len(d.Entries))
	for _, e := range d.Entries {
		c, err := copyIn(e, now)
		if err != nil {
			return 0, nil, nil, err
		}
		toWrite = append(toWrite, c)
	}

	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	// Work on a copy of the touched rows first so that a conflict writes nothing. An entry
	// lives in its own namespace: the conversation's, or the principal's.
	type stagedKey struct {
		ns nsKey
		ek entryKey
	}
	staged := make(map[stagedKey]core.Entry, len(toWrite))
	out := make([]core.Entry, 0, len(toWrite))
	for _, e := range toWrite {
		sk := stagedKey{nsKey{w.Tenant, e.Namespace}, entryKey{e.MemoryID, e.ID}}
		old, exists := staged[sk]
		if !exists {
			old, exists = s.es.entries[sk.ns][sk.ek]
		}
		if exists && live(old, now) {
			if e.Kind != core.KindFact {
				return 0, nil, nil, &turns.EntryInTheWay{MemoryID: e.MemoryID, EntryID: e.ID}
			}
			e.Version = old.Version + 1
			e.CreatedAt = old.CreatedAt
			e.AccessCount = old.AccessCount
			e.LastAccessedAt = old.LastAccessedAt
			e.Supersedes = &core.Superseded{Value: old.Value, Conversation: old.SourceConversation, Turn: old.SourceTurn}
		}
		staged[sk] = e
		out = append(out, copyEntry(e))
	}
	if s.es.entries == nil {
		s.es.entries = make(map[nsKey]map[entryKey]core.Entry)
	}
	var response []byte
	if w.Idempotency != nil && w.Respond != nil {
		if response, err = w.Respond(turn, out); err != nil {
			return 0, nil, nil, err
		}
	}
	for sk, e := range staged {
		byID := s.es.entries[sk.ns]
		if byID == nil {
			byID = make(map[entryKey]core.Entry)
			s.es.entries[sk.ns] = byID
		}
		byID[sk.ek] = e
	}
	for _, f := range d.NewFingerprints {
		fk := k
		if f.Namespace != "" {
			fk = nsKey{w.Tenant, f.Namespace}
		}
		f.Namespace = ""
		s.recordFingerprints(fk, []core.Fingerprint{f})
	}
	if w.LinkRunID != "" || len(w.LinkRecallIDs) > 0 {
		s.linkLocked(w.Tenant, w.Namespace, turn, w.LinkRunID, w.LinkRecallIDs)
	}
	return turn, out, response, nil
}

// recordFingerprints keeps the first fingerprint per memory. Called with
// mu held for writing.
func (s *Store) recordFingerprints(k nsKey, fs []core.Fingerprint) {
	if len(fs) == 0 {
		return
	}
	if s.es.fingerprints == nil {
		s.es.fingerprints = make(map[nsKey]map[string]core.Fingerprint)
	}
	m := s.es.fingerprints[k]
	if m == nil {
		m = make(map[string]core.Fingerprint)
		s.es.fingerprints[k] = m
	}
	for _, f := range fs {
		if _, ok := m[f.MemoryID]; !ok {
			m[f.MemoryID] = f
		}
	}
}

// copyIn validates e and returns the copy to store: JSON compacted (Metadata nil → {}),
// version 1, timestamps normalised as Postgres stores them and zero ones set to now, slices
// unaliased.
func copyIn(e core.Entry, now time.Time) (core.Entry, error) {
	value, err := compactJSON(e.Value)
	if err != nil {
		return core.Entry{}, fmt.Errorf("value of entry %q: %w", e.ID, err)
	}
	metadata := json.RawMessage("{}")
	if len(e.Metadata) > 0 {
		if metadata, err = compactJSON(e.Metadata); err != nil {
			return core.Entry{}, fmt.Errorf("metadata of entry %q: %w", e.ID, err)
		}
	}
	e.Value, e.Metadata = value, metadata
	e.Version = 1
	e.Supersedes = nil // the store records it, on an upsert
	for _, ts := range []*time.Time{&e.CreatedAt, &e.UpdatedAt, &e.LastAccessedAt} {
		if ts.IsZero() {
			*ts = now
		}
		*ts = normalise(*ts)
	}
	if !e.ExpiresAt.IsZero() {
		e.ExpiresAt = normalise(e.ExpiresAt)
	}
	if len(e.Embedding) == 0 {
		e.Embedding = nil
	} else {
		e.Embedding = slices.Clone(e.Embedding)
	}
	e.Lexical = e.Lexical.Clone()
	return e, nil
}

// compactJSON validates b (as Postgres's jsonb does) and returns a compact copy of it.
func compactJSON(b json.RawMessage) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return json.RawMessage(buf.Bytes()), nil
}

// copyEntry returns e with its slices unaliased.
func copyEntry(e core.Entry) core.Entry {
	if e.Supersedes != nil {
		sup := *e.Supersedes
		sup.Value = slices.Clone(sup.Value)
		e.Supersedes = &sup
	}
	e.Value = slices.Clone(e.Value)
	e.Metadata = slices.Clone(e.Metadata)
	e.Embedding = slices.Clone(e.Embedding)
	e.Lexical = nil // what a read returns of an entry, as the Postgres store (never its lexical features)
	return e
}

// sortKey orders entries newest first exactly as the Postgres store does: turn (none = 0),
// index (none = -1), id, memory id, all descending.
type sortKey struct {
	turn, idx    int
	id, memoryID string
}

func keyOf(e core.Entry) sortKey {
	k := sortKey{turn: e.Turn, idx: e.Index, id: e.ID, memoryID: e.MemoryID}
	if e.Turn == 0 && e.Index == 0 {
		k.idx = -1
	}
	return k
}

// before reports whether a sorts before b in newest-first order.
func (a sortKey) before(b sortKey) bool {
	switch {
	case a.turn != b.turn:
		return a.turn > b.turn
	case a.idx != b.idx:
		return a.idx > b.idx
	case a.id != b.id:
		return a.id > b.id
	default:
		return a.memoryID > b.memoryID
	}
}

// position is the opaque ListEntries cursor: the last entry's sort key.
type position struct {
	Turn     int    `json:"t"`
	Idx      int    `json:"i"`
	ID       string `json:"id"`
	MemoryID string `json:"m"`
}

// ListEntries returns up to q.Limit live entries newest first (see sortKey), after the
// position q.After, and the position of the last one when there are more.
func (s *Store) ListEntries(ctx context.Context, q core.EntryQuery) ([]core.Entry, string, error) {
	if err := ctx.Err(); err != nil {
		return nil, "", err
	}
	out := []core.Entry{}
	if q.Limit <= 0 {
		return out, "", nil
	}
	var after *sortKey
	if q.After != "" {
		var p position
		b, err := base64.RawURLEncoding.DecodeString(q.After)
		if err == nil {
			err = json.Unmarshal(b, &p)
		}
		if err != nil {
			return nil, "", &core.ValidationError{Code: core.CodeInvalidField, Path: "after",
				Detail: "not a position returned by a previous page"}
		}
		after = &sortKey{turn: p.Turn, idx: p.Idx, id: p.ID, memoryID: p.MemoryID}
	}
	s.es.mu.RLock()
	var page []core.Entry
	for _, e := range s.es.entries[nsKey{q.Tenant, q.Namespace}] {
		if (q.MemoryID != "" && e.MemoryID != q.MemoryID) || (q.Kind != "" && e.Kind != q.Kind) ||
			(q.Tier != "" && e.Tier != q.Tier) || !live(e, normalise(q.Now)) {
			continue
		}
		if after != nil && !after.before(keyOf(e)) {
			continue
		}
		page = append(page, e)
	}
	s.es.mu.RUnlock()
	slices.SortFunc(page, func(a, b core.Entry) int {
		ka, kb := keyOf(a), keyOf(b)
		switch {
		case ka.before(kb):
			return -1
		case kb.before(ka):
			return 1
		}
		return 0
	})
	next := ""
	if len(page) > q.Limit {
		page = page[:q.Limit]
		k := keyOf(page[len(page)-1])
		b, _ := json.Marshal(position{Turn: k.turn, Idx: k.idx, ID: k.id, MemoryID: k.memoryID})
		next = base64.RawURLEncoding.EncodeToString(b)
	}
	for _, e := range page {
		e = copyEntry(e)
		if !q.WithEmbedding {
			e.Embedding = nil
		}
		out = append(out, e)
	}
	return out, next, nil
}

// GetEntry returns a copy of one live entry; with touch it first bumps AccessCount and sets
// LastAccessedAt to now.
func (s *Store) GetEntry(ctx context.Context, tenant, namespace, memoryID, id string, touch bool, now time.Time) (core.Entry, error) {
	if err := ctx.Err(); err != nil {
		return core.Entry{}, err
	}
	k, ek := nsKey{tenant, namespace}, entryKey{memoryID, id}
	if touch {
		s.es.mu.Lock()
		defer s.es.mu.Unlock()
	} else {
		s.es.mu.RLock()
		defer s.es.mu.RUnlock()
	}
	e, ok := s.es.entries[k][ek]
	if !ok || !live(e, normalise(now)) {
		return core.Entry{}, &core.NotFoundError{What: "entry", ID: id}
	}
	if touch {
		e.AccessCount++
		e.LastAccessedAt = normalise(now)
		s.es.entries[k][ek] = e
	}
	return copyEntry(e), nil
}

// ForgetNamespace erases every entry of the namespace (expired ones included, and counted),
// waiting for a turn write in progress on it to finish.
func (s *Store) ForgetNamespace(ctx context.Context, tenant, namespace string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	k := nsKey{tenant, namespace}
	lock := s.nsLock(k)
	lock.Lock()
	defer lock.Unlock()
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	n := int64(len(s.es.entries[k]))
	delete(s.es.entries, k)
	delete(s.es.fingerprints, k)
	s.markForgotten(k)
	return n, nil
}

// purgeEntries erases every entry of the tenant's memory in every namespace.
func (s *Store) purgeEntries(tenant, memoryID string) {
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	for k, byID := range s.es.entries {
		if k.tenant != tenant {
			continue
		}
		for ek := range byID {
			if ek.memoryID == memoryID {
				delete(byID, ek)
			}
		}
	}
}

// PutEntries inserts entries outside a turn (summaries); an id already stored and live is left
// as it is, an expired one is replaced.
func (s *Store) PutEntries(ctx context.Context, entries []core.Entry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := normalise(time.Now())
	staged := make([]core.Entry, 0, len(entries))
	for _, e := range entries {
		c, err := copyIn(e, now)
		if err != nil {
			return err
		}
		staged = append(staged, c)
	}
	s.es.mu.Lock()
	defer s.es.mu.Unlock()
	if s.es.entries == nil {
		s.es.entries = make(map[nsKey]map[entryKey]core.Entry)
	}
	for _, e := range staged {
		k := nsKey{e.Tenant, e.Namespace}
		byID := s.es.entries[k]
		if byID == nil {
			byID = make(map[entryKey]core.Entry)
			s.es.entries[k] = byID
		}
		ek := entryKey{e.MemoryID, e.ID}
		if old, ok := byID[ek]; ok && live(old, now) {
			continue
		}
		byID[ek] = e
	}
	return nil
}

// CountWrittenFrom counts the live entries of namespace written from conversation.
func (s *Store) CountWrittenFrom(ctx context.Context, tenant, namespace, conversation string, now time.Time) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	now = normalise(now)
	s.es.mu.RLock()
	defer s.es.mu.RUnlock()
	var n int64
	for _, e := range s.es.entries[nsKey{tenant, namespace}] {
		if e.SourceConversation == conversation && live(e, now) {
			n++
		}
	}
	return n, nil
}

// ForgetPrincipal erases the principal everywhere in the tenant: the principal's namespace and
// every namespace starting with prefix, their fingerprints and tombstones, and the audit records
// of them (receipts, runs, links, ablations). It holds the principal's namespace lock, which
// every turn writing a principal-scoped memory takes, and each conversation's while erasing it.
func (s *Store) ForgetPrincipal(ctx context.Context, tenant, principal, principalNS, prefix string) (turns.ForgetReport, error) {
	if err := ctx.Err(); err != nil {
		return turns.ForgetReport{}, err
	}
	plock := s.nsLock(nsKey{tenant, principalNS})
	plock.Lock()
	defer plock.Unlock()
	of := func(k nsKey) bool { return k.tenant == tenant && strings.HasPrefix(k.namespace, prefix) }
	var rep turns.ForgetReport
	s.es.mu.Lock()
	for k, byID := range s.es.entries {
		if !of(k) {
			continue
		}
		if k.namespace == principalNS {
			rep.PrincipalEntries += int64(len(byID))
		} else if len(byID) > 0 {
			rep.Conversations++
			rep.ConversationEntries += int64(len(byID))
		}
		delete(s.es.entries, k)
	}
	for k := range s.es.fingerprints {
		if of(k) {
			delete(s.es.fingerprints, k)
		}
	}
	for k, b := range s.es.recalls {
		var r struct {
			Identity core.Identity `json:"identity"`
		}
		if k[0] == tenant && json.Unmarshal(b, &r) == nil && strings.HasPrefix(r.Identity.Namespace(), prefix) {
			delete(s.es.recalls, k)
			rep.Recalls++
		}
	}
	for k := range s.ex.links {
		if k.tenant == tenant && strings.HasPrefix(k.namespace, prefix) {
			delete(s.ex.links, k)
		}
	}
	for k, as := range s.ex.ablations {
		if k.tenant == tenant && strings.HasPrefix(k.namespace, prefix) {
			rep.Ablations += int64(len(as))
			delete(s.ex.ablations, k)
		}
	}
	for k := range s.ex.forgotten {
		if of(k) {
			delete(s.ex.forgotten, k)
		}
	}
	s.es.mu.Unlock()
	rs := s.runTable()
	rs.mu.Lock()
	for id, m := range rs.runs[tenant] {
		if m.r.Principal == principal || strings.HasPrefix(m.r.Namespace, prefix) {
			delete(rs.runs[tenant], id)
			rep.Runs++
		}
	}
	rs.mu.Unlock()
	return rep, nil
}
