package server

import (
	"encoding/json"
	"fmt"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
	"github.com/footprint/footprint/internal/http/apitime"
	"github.com/footprint/footprint/internal/http/gen"
)

// Mapping between the generated recall types and core's.

func recallParamsIn(id core.Identity, in gen.RecallInput) recall.RecallParams {
	p := recall.RecallParams{
		Identity:               id,
		Query:                  deref(in.Query),
		Memories:               in.Memories,
		ContextTokensRemaining: in.ContextTokensRemaining,
		Turn:                   deref(in.Turn),
		RunID:                  deref(in.RunID),
		Exclude:                in.Exclude,
	}
	for _, m := range in.Messages {
		p.Messages = append(p.Messages, core.Message{Role: string(m.Role), Content: m.Content})
	}
	return p
}

func recallOut(r recall.RecallResult) (gen.RecallResult, error) {
	out := gen.RecallResult{
		RecallID:       r.RecallID,
		ConversationID: r.Identity.ConversationID,
		Principal:      optString(r.Identity.Principal),
		QueryHash:      r.QueryHash,
		CreatedAt:      apitime.Of(r.CreatedAt),
		SystemPrompt:   r.SystemPrompt,
		Memories:       make([]gen.MemoryRecall, 0, len(r.Memories)),
		Injections:     make([]gen.Injection, 0, len(r.Injections)),
		RunID:          optString(r.RunID),
	}
	if r.Rerun {
		rerun := true
		out.Rerun, out.Exclude = &rerun, append([]string{}, r.Exclude...)
	}
	if r.Turn > 0 {
		t := r.Turn
		out.Turn = &t
	}
	for _, m := range r.Memories {
		strategy, err := json.Marshal(m.Strategy)
		if err != nil {
			return gen.RecallResult{}, fmt.Errorf("marshal strategy of memory %q: %w", m.MemoryID, err)
		}
		out.Memories = append(out.Memories, gen.MemoryRecall{
			MemoryID:   m.MemoryID,
			Type:       gen.MemoryType(m.Type),
			Strategy:   strategy,
			Flavor:     gen.Flavor(m.Flavor),
			Scope:      optScope(m.Scope),
			SystemSpan: spanOut(m.SystemSpan),
			Evidence:   evidenceOut(m.Evidence),
		})
	}
	for _, in := range r.Injections {
		inj := gen.Injection{ID: in.ID, Flavor: gen.Flavor(in.Flavor), Description: in.Description,
			Inject: gen.InjectionContent{SystemSpan: spanOut(in.SystemSpan)}}
		if len(in.Messages) > 0 {
			inj.Inject.Messages = messagesOut(in.Messages)
		}
		if rt := in.Retrieval; rt != nil {
			inj.Retrieval = &gen.InjectionRetrieval{Score: rt.Score, Rank: rt.Rank, Threshold: rt.Threshold}
		}
		out.Injections = append(out.Injections, inj)
	}
	return out, nil
}

// spanOut is a part of the recall's systemPrompt, on the wire.
func spanOut(s *recall.Span) *gen.PromptSpan {
	if s == nil {
		return nil
	}
	return &gen.PromptSpan{StartByte: s.Start, EndByte: s.End}
}

func messagesOut(ms []core.Message) []gen.Message {
	out := make([]gen.Message, 0, len(ms))
	for _, m := range ms {
		out = append(out, gen.Message{Role: gen.MessageRole(m.Role), Content: m.Content})
	}
	return out
}

func evidenceOut(e recall.Evidence) gen.Evidence {
	out := gen.Evidence{
		Strategy:           gen.StrategyKind(e.Strategy),
		QueryHash:          e.QueryHash,
		Threshold:          e.Threshold,
		NearestMiss:        e.NearestMiss,
		ConsideredCount:    e.ConsideredCount,
		AdmittedCount:      e.AdmittedCount,
		RejectedCount:      e.RejectedCount,
		CandidatesComplete: e.CandidatesComplete,
		CorpusEmpty:        e.CorpusEmpty,
		Note:               optString(e.Note),
		BeforeTurn:         optInt(e.BeforeTurn),
		EmbedderID:         optString(e.EmbedderID),
		Candidates:         make([]gen.Candidate, 0, len(e.Candidates)),
	}
	if e.K > 0 {
		k := e.K
		out.K = &k
	}
	if e.Dimensions > 0 {
		d := e.Dimensions
		out.Dimensions = &d
	}
	if e.SearchMode != "" {
		m := gen.SearchMode(e.SearchMode)
		out.SearchMode = &m
	}
	if e.Ranking != "" {
		r := gen.Ranking(e.Ranking)
		out.Ranking = &r
		src := gen.EvidenceRankingSource(e.RankingSource)
		out.RankingSource = &src
		out.Alpha = e.Alpha
	}
	if e.ThresholdOn != "" {
		on := gen.Ranking(e.ThresholdOn)
		src := gen.EvidenceThresholdSource(e.ThresholdSource)
		out.ThresholdOn, out.ThresholdSource = &on, &src
	}
	if e.Decision != "" {
		d := gen.BudgetDecision(e.Decision)
		out.Decision = &d
	}
	for _, c := range e.Candidates {
		gc := gen.Candidate{ID: c.ID, MemoryID: c.MemoryID, Score: c.Score, VectorScore: c.VectorScore, LexicalScore: c.LexicalScore,
			Rank: c.Rank, Admitted: c.Admitted,
			PromptPosition: c.PromptPosition, SystemSpan: spanOut(c.SystemSpan), DocURI: optString(c.DocURI),
			Page: c.Page, Heading: optString(c.Heading), ConversationID: optString(c.ConversationID)}
		if c.Reason != "" {
			r := gen.CandidateReason(c.Reason)
			gc.Reason = &r
		}
		if c.Turn > 0 {
			t := c.Turn
			gc.Turn = &t
		}
		out.Candidates = append(out.Candidates, gc)
	}
	if len(e.Excluded) > 0 {
		out.Excluded = e.Excluded
	}
	if f := e.Fold; f != nil {
		gf := &gen.FoldEvidence{Status: gen.FoldEvidenceStatus(f.Status), SummaryID: optString(f.SummaryID), Covers: f.Covers,
			LLM: optString(f.LLM), Model: optString(f.Model), Reason: optString(f.Reason)}
		if f.FromTurn > 0 {
			gf.FromTurn, gf.ToTurn = &f.FromTurn, &f.ToTurn
		}
		if f.InputTokens > 0 || f.OutputTokens > 0 {
			gf.InputTokens, gf.OutputTokens = &f.InputTokens, &f.OutputTokens
		}
		out.Fold = gf
	}
	for _, p := range e.Parts {
		out.Parts = append(out.Parts, evidenceOut(p))
	}
	return out
}

func documentsIn(in gen.DocumentBatch) []recall.Document {
	out := make([]recall.Document, 0, len(in.Documents))
	for _, d := range in.Documents {
		doc := recall.Document{ID: d.ID, Text: d.Text, DocURI: deref(d.DocURI), Page: deref(d.Page), Heading: deref(d.Heading)}
		if d.Metadata != nil {
			doc.Metadata, _ = json.Marshal(d.Metadata) // a decoded JSON object always re-encodes
		}
		out = append(out, doc)
	}
	return out
}

// optScope is a recalled memory's scope when it is not the default.
func optScope(s core.MemoryScope) *gen.MemoryScope {
	if s == "" {
		return nil
	}
	out := gen.MemoryScope(s)
	return &out
}
