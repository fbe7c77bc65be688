package recall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/strategies"
)

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
	out, _, err := s.IndexDocumentsWithKey(ctx, tenant, memoryID, docs, "")
	return out, err
}

// IndexDocumentsWithKey is IndexDocuments with an Idempotency-Key (none when key is ""): a
// retry of the same request with the same key answers as the first did (replayed true) and
// writes nothing; the key with another request is refused (idempotency-key-reused).
func (s *Service) IndexDocumentsWithKey(ctx context.Context, tenant, memoryID string, docs []Document, key string) (_ []IndexedDocument, replayed bool, _ error) {
	out, replayed, err := s.indexDocuments(ctx, tenant, memoryID, docs, key)
	if errors.Is(err, core.ErrKeyReused) {
		return nil, false, core.KeyReused("indexDocuments")
	}
	return out, replayed, err
}

func (s *Service) indexDocuments(ctx context.Context, tenant, memoryID string, docs []Document, key string) ([]IndexedDocument, bool, error) {
	m, err := s.defs.GetMemory(ctx, tenant, memoryID)
	if err != nil {
		return nil, false, err
	}
	if !m.Corpus {
		return nil, false, &core.ValidationError{Code: core.CodeInvalidField, Site: fmt.Sprintf("indexDocuments[%s]", memoryID), Path: "memoryId",
			Detail: fmt.Sprintf("memory %q is not a corpus; define one with {\"type\":\"semantic\",\"strategy\":{\"kind\":\"topK\"},\"corpus\":true} to index documents.", memoryID)}
	}
	kinds := strategyKinds(m.Strategy)
	if len(kinds.topKs) == 0 {
		return nil, false, fmt.Errorf("corpus memory %q has no topK strategy: %w", memoryID, core.ErrInvalid)
	}
	embID := strategies.EmbedderFor(kinds.topKs[0], m, s.caps)
	emb, ok := s.embedders[embID]
	if !ok {
		return nil, false, &core.ValidationError{Code: core.CodeMissingRequirement, Site: "indexDocuments", Path: "memoryId",
			Detail: fmt.Sprintf("corpus %q needs the embedder %q, which this server no longer has; configure it again to index documents.", memoryID, embID)}
	}
	now := s.now().UTC().Truncate(time.Microsecond)
	var texts []string
	var chunks []core.Entry
	var out []IndexedDocument
	var ids []string
	seen := map[string]bool{}
	for i, d := range docs {
		for _, t := range []string{d.ID, d.Text, d.DocURI, d.Heading} {
			if reason := core.CheckText(t); reason != "" {
				return nil, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d]", i), Detail: "document text " + reason + "."}
			}
		}
		if reason := core.CheckJSONText(d.Metadata); reason != "" {
			return nil, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].metadata", i), Detail: "`metadata` " + reason + "."}
		}
		if seen[d.ID] {
			return nil, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].id", i), Detail: fmt.Sprintf("document id %q appears twice in this request.", d.ID)}
		}
		seen[d.ID] = true
		ids = append(ids, d.ID)
		// A chunk without a letter or digit (a "* * *" separator between long paragraphs)
		// could never be found by a search: it is left out. A document made only of such
		// text is refused, so that nobody believes it indexed.
		var parts []string
		for _, text := range ChunkText(d.Text, maxChunkChars) {
			if core.HasWords(text) {
				parts = append(parts, text)
			}
		}
		if len(parts) == 0 && strings.TrimSpace(d.Text) != "" {
			return nil, false, &core.ValidationError{Code: core.CodeInvalidField, Site: "indexDocuments", Path: fmt.Sprintf("documents[%d].text", i),
				Detail: fmt.Sprintf("document %q has no words (only punctuation, symbols or spaces), so no search could ever find it; send its text, or an empty text to remove the document.", d.ID),
				Fix:    "Orders ship within two business days."}
		}
		for n, text := range parts {
			value, _ := json.Marshal(map[string]any{"text": text, "docId": d.ID, "docUri": d.DocURI, "page": d.Page, "heading": d.Heading, "chunk": n})
			chunks = append(chunks, core.Entry{Tenant: tenant, MemoryID: memoryID, Namespace: core.CorpusNamespace,
				ID: fmt.Sprintf("%s#%d", d.ID, n), Kind: core.KindDocument, Index: n, Value: value, Metadata: d.Metadata,
				Version: 1, CreatedAt: now, UpdatedAt: now, LastAccessedAt: now, Tier: m.Tier, Lexical: core.LexicalOf(text)})
			texts = append(texts, text)
		}
		out = append(out, IndexedDocument{ID: d.ID, Chunks: len(parts)})
	}
	const batch = 256
	for i := 0; i < len(texts); i += batch {
		j := min(i+batch, len(texts))
		vs, err := emb.Embed(ctx, texts[i:j])
		if err != nil {
			return nil, false, core.EmbedError(err, "indexDocuments", "documents", embID)
		}
		for k, v := range vs {
			chunks[i+k].Embedding, chunks[i+k].EmbeddingModel = v, emb.Info().Model
		}
	}
	once, err := core.NewOnce(key, "indexDocuments", struct {
		MemoryID  string
		Documents []Document
	}{memoryID, docs}, out, now, s.keyTTL)
	if err != nil {
		return nil, false, err
	}
	if err := s.store.PutDocuments(ctx, tenant, memoryID, ids, chunks, once); err != nil {
		var fm *core.FingerprintMismatch
		if errors.As(err, &fm) {
			return nil, false, &core.ValidationError{Code: core.CodeEmbedderMismatch, Site: fmt.Sprintf("indexDocuments[%s]", memoryID), Path: "documents",
				Detail: fmt.Sprintf("corpus %q holds %s vectors of %d dimensions; these documents were embedded as %s with %d. Vectors of different spaces are never compared: re-index the corpus into a new memory.",
					memoryID, fm.HaveModel, fm.HaveDims, fm.GotModel, fm.GotDims)}
		}
		return nil, false, err
	}
	if once != nil && once.Replay != nil {
		var first []IndexedDocument
		if err := json.Unmarshal(once.Replay, &first); err != nil {
			return nil, false, fmt.Errorf("decode stored idempotent response: %w", err)
		}
		return first, true, nil
	}
	return out, false, nil
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
