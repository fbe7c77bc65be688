package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// maxRecallEntries bounds how many entries a non-ranking read side loads.
const maxRecallEntries = 1000

// CorpusNamespace is the namespace of a corpus memory's document chunks:
// tenant-wide, never a conversation's (those always contain '/').
const CorpusNamespace = ""

var recallIDEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

func newRecallID() string {
	var b [15]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "rcl_" + recallIDEncoding.EncodeToString(b[:])
}

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
	go func() { done <- s.store.SaveRecall(ctx, p.Identity.Tenant, res) }()
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
		return RecallResult{}, &ValidationError{Code: CodeInvalidField, Site: "recall", Path: "query",
			Detail: "recall needs a query: send `query`, or `messages` with a user message that has content.", Fix: "Where is my order?"}
	}
	if reason := checkText(query); reason != "" {
		return RecallResult{}, &ValidationError{Code: CodeInvalidField, Site: "recall", Path: "query", Detail: "the query " + reason + "."}
	}
	if p.ContextTokensRemaining != nil && *p.ContextTokensRemaining < 0 {
		return RecallResult{}, &ValidationError{Code: CodeInvalidField, Site: "recall", Path: "contextTokensRemaining", Detail: "`contextTokensRemaining` cannot be negative.", Fix: 4000}
	}
	all, err := s.memories.get(ctx, p.Identity.Tenant, s.allMemories)
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
	embedQuery := func(id string) ([]float32, EmbedderInfo, error) {
		emb, ok := s.embedders[id]
		if !ok {
			return nil, EmbedderInfo{}, &ValidationError{Code: CodeMissingRequirement, Site: "recall", Path: "memories",
				Detail: fmt.Sprintf("a memory of this recall needs the embedder %q, which this server no longer has; configure it again, or leave the memory out with `memories`.", id)}
		}
		if v, ok := vectors[id]; ok {
			return v, emb.Info(), nil
		}
		if !hasWords(query) {
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
	for _, m := range chosen {
		in := ReadInput{Memory: m, QueryHash: qhash, ContextTokensRemaining: p.ContextTokensRemaining, Now: now}
		namespace := p.Identity.Namespace()
		if m.Corpus {
			namespace = CorpusNamespace
		}
		kinds := strategyKinds(m.Strategy)
		if kinds.others {
			entries, next, err := s.store.ListEntries(ctx, EntryQuery{Tenant: p.Identity.Tenant, Namespace: namespace,
				MemoryID: m.ID, Limit: maxRecallEntries, Now: now})
			if err != nil {
				return RecallResult{}, err
			}
			in.Entries, in.EntriesTruncated = entries, next != ""
		}
		if len(kinds.topKs) > 0 {
			rankings, err := s.rankParts(ctx, p.Identity.Tenant, namespace, m, kinds.topKs, now, embedQuery)
			if err != nil {
				return RecallResult{}, err
			}
			in.Rankings = rankings
		}
		var fold *FoldEvidence
		if sum, ok := findKind(m.Strategy, Summarize); ok {
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
				if rec.Evidence.Parts[i].Strategy == Summarize {
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
		result.Memories = append(result.Memories, rec)
	}
	result.Injections = Injections(result.Memories)
	result.SystemPrompt = SystemPrompt(result.Memories)
	return result, nil
}

// GetRecall reads a stored receipt back.
func (s *Service) GetRecall(ctx context.Context, tenant, id string) (RecallResult, error) {
	return s.store.GetRecall(ctx, tenant, id)
}

// pick returns the named memories (all when none are named), in id order;
// a named memory that does not exist is ErrNotFound.
func pick(all []Memory, named []string) ([]Memory, error) {
	if len(named) == 0 {
		return all, nil
	}
	want := map[string]bool{}
	for _, id := range named {
		want[id] = true
	}
	var out []Memory
	for _, m := range all {
		if want[m.ID] {
			out = append(out, m)
			delete(want, m.ID)
		}
	}
	for _, id := range named {
		if want[id] {
			return nil, &NotFoundError{What: "memory", ID: id}
		}
	}
	return out, nil
}

// kindSet says which read paths a strategy needs: ranking (its topK parts,
// in the order the strategy lists them, a hybrid's depth first, as the
// reader meets them) and/or the memory's entries.
type kindSet struct {
	topKs  []Strategy
	others bool
}

func strategyKinds(s Strategy) kindSet {
	var ks kindSet
	var walk func(Strategy)
	walk = func(x Strategy) {
		switch x.Kind {
		case TopK:
			ks.topKs = append(ks.topKs, x)
		case Hybrid:
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

// rankParts ranks the memory's entries for each of its topK parts. Parts embedding the query
// with the same embedder share one store ranking, as long as the longest of them asks for
// (k + rejectWindow); each part gets it cut to its own length.
func (s *Service) rankParts(ctx context.Context, tenant, namespace string, m Memory, parts []Strategy, now time.Time,
	embedQuery func(string) ([]float32, EmbedderInfo, error)) ([]PartRanking, error) {
	out := make([]PartRanking, len(parts))
	limits := make([]int, len(parts))
	longest := map[string]int{}
	for i, part := range parts {
		id := embedderFor(part, m, s.caps)
		k, rw := topKDefaults(part, m.Type)
		limits[i] = k + rw
		out[i].EmbedderID = id
		longest[id] = max(longest[id], limits[i])
	}
	shared := map[string]PartRanking{}
	for i := range out {
		id := out[i].EmbedderID
		pr, ok := shared[id]
		if !ok {
			vec, info, err := embedQuery(id)
			if err != nil {
				return nil, err
			}
			pr = PartRanking{EmbedderID: id, Dimensions: info.Dimensions, Unembeddable: vec == nil}
			if vec != nil {
				pr.Dimensions = len(vec)
				rk, err := s.store.RankEntries(ctx, RankQuery{Tenant: tenant, Namespace: namespace, MemoryID: m.ID,
					Kinds: rankKinds(m), Vector: vec, Model: info.Model, Limit: longest[id], Now: now})
				if err != nil {
					return nil, err
				}
				pr.Ranked = &rk
			}
			shared[id] = pr
		}
		out[i] = pr
		if pr.Ranked != nil {
			rk := *pr.Ranked
			rk.Ranked = rk.Ranked[:min(len(rk.Ranked), max(limits[i], 0))]
			out[i].Ranked = &rk
		}
	}
	return out, nil
}

// withoutExcludedRanked drops excluded entries from a ranking (and from its count), adding
// their ids to dropped.
func withoutExcludedRanked(rk *RankResult, excluded map[string]bool, dropped []string) []string {
	if rk == nil {
		return dropped
	}
	kept := rk.Ranked[:0:0]
	for _, sc := range rk.Ranked {
		if excluded[sc.Entry.ID] {
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

// topKDefaults returns k and the reject window for a topK strategy.
func topKDefaults(s Strategy, t MemoryType) (int, int) {
	k := 3
	if t == Causal {
		k = 1
	}
	if v, ok := s.Int("topK"); ok {
		k = int(v)
	}
	rw := 10
	if v, ok := s.Int("rejectWindow"); ok {
		rw = int(v)
	}
	return k, rw
}

// rankKinds are the entry kinds a memory's topK ranks.
func rankKinds(m Memory) []EntryKind {
	switch {
	case m.Type == Causal:
		return []EntryKind{KindSnapshot}
	case m.Corpus:
		return []EntryKind{KindDocument}
	default:
		return []EntryKind{KindMessage}
	}
}

// Document is one document to index into a corpus memory.
type Document struct {
	ID       string
	Text     string
	DocURI   string
	Page     int
	Heading  string
	Metadata json.RawMessage
}

// IndexedDocument says how many chunks a document became.
type IndexedDocument struct {
	ID     string
	Chunks int
}

// maxChunkChars is the chunking rule's target size.
const maxChunkChars = 1000

// IndexDocuments chunks, embeds and stores documents in a corpus memory,
// replacing any earlier version of each document id.
func (s *Service) IndexDocuments(ctx context.Context, tenant, memoryID string, docs []Document) ([]IndexedDocument, error) {
	m, err := s.store.GetMemory(ctx, tenant, memoryID)
	if err != nil {
		return nil, err
	}
	if !m.Corpus {
		return nil, &ValidationError{Code: CodeInvalidField, Site: fmt.Sprintf("indexDocuments[%s]", memoryID), Path: "memoryId",
			Detail: fmt.Sprintf("memory %q is not a corpus; define one with {\"type\":\"semantic\",\"strategy\":{\"kind\":\"topK\"},\"corpus\":true} to index documents.", memoryID)}
	}
	kinds := strategyKinds(m.Strategy)
	if len(kinds.topKs) == 0 {
		return nil, fmt.Errorf("corpus memory %q has no topK strategy: %w", memoryID, ErrInvalid)
	}
	embID := embedderFor(kinds.topKs[0], m, s.caps)
	emb, ok := s.embedders[embID]
	if !ok {
		return nil, &ValidationError{Code: CodeMissingRequirement, Site: "indexDocuments", Path: "memoryId",
			Detail: fmt.Sprintf("corpus %q needs the embedder %q, which this server no longer has; configure it again to index documents.", memoryID, embID)}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var texts []string
	var chunks []Entry
	var out []IndexedDocument
	var ids []string
	seen := map[string]bool{}
	for i, d := range docs {
		for _, t := range []string{d.ID, d.Text, d.DocURI, d.Heading} {
			if reason := checkText(t); reason != "" {
				return nil, &ValidationError{Code: CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d]", i), Detail: "document text " + reason + "."}
			}
		}
		if reason := checkJSONText(d.Metadata); reason != "" {
			return nil, &ValidationError{Code: CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].metadata", i), Detail: "`metadata` " + reason + "."}
		}
		if seen[d.ID] {
			return nil, &ValidationError{Code: CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].id", i), Detail: fmt.Sprintf("document id %q appears twice in this request.", d.ID)}
		}
		seen[d.ID] = true
		ids = append(ids, d.ID)
		// A chunk without a letter or digit (a "* * *" separator between long paragraphs)
		// could never be found by a search: it is left out. A document made only of such
		// text is refused, so that nobody believes it indexed.
		var parts []string
		for _, text := range ChunkText(d.Text, maxChunkChars) {
			if hasWords(text) {
				parts = append(parts, text)
			}
		}
		if len(parts) == 0 && strings.TrimSpace(d.Text) != "" {
			return nil, &ValidationError{Code: CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].text", i),
				Detail: fmt.Sprintf("document %q has no words (only punctuation, symbols or spaces), so no search could ever find it; send its text, or an empty text to remove the document.", d.ID),
				Fix:    "Orders ship within two business days."}
		}
		for n, text := range parts {
			value, _ := json.Marshal(map[string]any{"text": text, "docId": d.ID, "docUri": d.DocURI, "page": d.Page, "heading": d.Heading, "chunk": n})
			chunks = append(chunks, Entry{Tenant: tenant, MemoryID: memoryID, Namespace: CorpusNamespace,
				ID: fmt.Sprintf("%s#%d", d.ID, n), Kind: KindDocument, Index: n, Value: value, Metadata: d.Metadata,
				Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now, Tier: m.Tier})
			texts = append(texts, text)
		}
		out = append(out, IndexedDocument{ID: d.ID, Chunks: len(parts)})
	}
	const batch = 256
	for i := 0; i < len(texts); i += batch {
		j := min(i+batch, len(texts))
		vs, err := emb.Embed(ctx, texts[i:j])
		if err != nil {
			return nil, embedError(err, "indexDocuments", "documents", embID)
		}
		for k, v := range vs {
			chunks[i+k].Embedding, chunks[i+k].EmbeddingModel = v, emb.Info().Model
		}
	}
	if err := s.store.PutDocuments(ctx, tenant, memoryID, ids, chunks); err != nil {
		var fm *FingerprintMismatch
		if errors.As(err, &fm) {
			return nil, &ValidationError{Code: CodeEmbedderMismatch, Site: fmt.Sprintf("indexDocuments[%s]", memoryID), Path: "documents",
				Detail: fmt.Sprintf("corpus %q holds %s vectors of %d dimensions; these documents were embedded as %s with %d. Vectors of different spaces are never compared: re-index the corpus into a new memory.",
					memoryID, fm.HaveModel, fm.HaveDims, fm.GotModel, fm.GotDims)}
		}
		return nil, err
	}
	return out, nil
}

// ChunkText splits text into chunks of at most max characters: on paragraph
// boundaries (blank lines) first, long paragraphs at whitespace, never
// inside a word (a single word longer than max is cut). Whitespace-only
// text yields no chunks.
func ChunkText(text string, max int) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if s := strings.TrimSpace(cur.String()); s != "" {
			out = append(out, s)
		}
		cur.Reset()
	}
	for _, para := range strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n\n") {
		para = strings.TrimSpace(para)
		if para == "" {
			continue
		}
		if cur.Len() > 0 && len([]rune(cur.String()))+2+len([]rune(para)) > max {
			flush()
		}
		if len([]rune(para)) <= max {
			if cur.Len() > 0 {
				cur.WriteString("\n\n")
			}
			cur.WriteString(para)
			continue
		}
		flush()
		for _, word := range strings.FieldsFunc(para, unicode.IsSpace) {
			for len([]rune(word)) > max {
				flush()
				r := []rune(word)
				out = append(out, string(r[:max]))
				word = string(r[max:])
			}
			if cur.Len() > 0 && len([]rune(cur.String()))+1+len([]rune(word)) > max {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteByte(' ')
			}
			cur.WriteString(word)
		}
		flush()
	}
	flush()
	return out
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on supported platforms
	return b
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

func withoutExcluded(entries []Entry, excluded map[string]bool, dropped []string) ([]Entry, []string) {
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

// findKind returns the first strategy of kind in s (itself or a hybrid part).
func findKind(s Strategy, kind StrategyKind) (Strategy, bool) {
	if s.Kind == kind {
		return s, true
	}
	for _, p := range s.Parts {
		if f, ok := findKind(p, kind); ok {
			return f, true
		}
	}
	return Strategy{}, false
}
