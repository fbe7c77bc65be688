package client

// A recall answer holds its text once, in RecallResult.SystemPrompt; memories, admitted
// candidates and injections name their part of it with a *PromptSpan (UTF-8 byte offsets).

// SpanText returns the part of the recall's SystemPrompt that span names, and false when
// span is nil (the memory recalled nothing; the candidate's memory was injected whole; the
// injection carries only messages) or does not lie within it.
func (r *RecallResult) SpanText(span *PromptSpan) (string, bool) {
	if r == nil || span == nil || span.StartByte < 0 || span.StartByte > span.EndByte || span.EndByte > len(r.SystemPrompt) {
		return "", false
	}
	return r.SystemPrompt[span.StartByte:span.EndByte], true
}

// InjectionText returns an injection's text for the system prompt: [RecallResult.SpanText] of
// its Inject.SystemSpan.
func (r *RecallResult) InjectionText(inj Injection) (string, bool) {
	return r.SpanText(inj.Inject.SystemSpan)
}
