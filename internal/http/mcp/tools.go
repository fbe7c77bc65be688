package mcp

import (
	"encoding/json"
	"strings"
)

// toolSpec names one tool and the REST operation it is. Everything else about the tool (its
// arguments, their schemas, its output schema) is read from that operation in the spec.
type toolSpec struct {
	name  string
	op    string // the operationId in api/openapi.yaml
	title string
	// description teaches an agent when to call the tool; the arguments are described by
	// their schemas, which come from the spec.
	description string
	readOnly    bool
	destructive bool
	idempotent  bool
	// text, when set, is the text content of a success instead of the JSON of the answer.
	text func(body []byte) string
}

// toolSpecs are the tools, in the order an agent meets them in a turn.
var toolSpecs = []toolSpec{
	{
		name: "list_strategies", op: "listStrategies", title: "List memory strategies",
		description: "Call this before define_memory, when choosing how a memory should keep and recall " +
			"things. Lists the seven strategies (window, budget, summarize, topK, extract, decay, hybrid): " +
			"what each does, which memory types accept it, the JSON Schema of its fields, a working example " +
			"and whether THIS deployment can run it (offerable, with what is missing). Filter with type " +
			"(e.g. episodic) and offerable=true.",
		readOnly: true, idempotent: true,
	},
	{
		name: "define_memory", op: "createMemory", title: "Define a memory",
		description: "Call this once per memory when setting an agent up, before its first turn: a memory " +
			"has an id, a type (episodic: the conversation; semantic: facts; causal: why past answers were " +
			"given; narrative: story beats) and a strategy ({\"kind\":\"window\",\"size\":20}, " +
			"{\"kind\":\"topK\",\"topK\":3,\"threshold\":0.2}, ...; see list_strategies). A definition " +
			"the server cannot run is refused with the field at fault (path) and a value that works (fix): " +
			"correct it and call again. dryRun=true checks a definition without storing it. Defining an id " +
			"that exists is refused (memory-exists): the memory is already there.",
		idempotent: false,
	},
	{
		name: "recall", op: "recall", title: "Recall for this turn",
		description: "Call this at the START of every turn, with the user's new message as query, before " +
			"answering. The text result is the system-prompt text to show the model for this turn, exactly " +
			"as the memories recalled it (empty when nothing cleared the thresholds). The structured result " +
			"holds the evidence: per memory, every candidate considered with its score, rank and whether it " +
			"was admitted or why not; the injections, each naming its part of systemPrompt by UTF-8 byte " +
			"offsets (systemSpan; the text itself is only in systemPrompt); and recallId, the receipt of " +
			"this recall. Announce each injection by its id when you show it to the model. Pass turn " +
			"and runId to link the recall to the turn you are answering, and keep recallId for post_turn.",
		text: recallText,
	},
	{
		name: "post_turn", op: "postTurn", title: "Post the finished turn",
		description: "Call this when a turn is FINISHED, once, with its messages (the user's and your " +
			"answer) and, for causal memories, its evidence (decisions taken, tools called). Every memory " +
			"decides what it stores from it; the answer lists what each wrote and the turn number the store " +
			"gave the turn. Link it to the recall it used (recallIds) and to its run (runId) so explain_turn " +
			"can walk the answer back later. Send an idempotencyKey (e.g. <conversationId>-turn-<n>) to make " +
			"a retry safe: the same key and arguments replay the first answer instead of storing the turn twice.",
	},
	{
		name: "explain_turn", op: "explainTurn", title: "Explain a turn's answer",
		description: "Call this when an answer looks wrong, or when asked why something was said: it walks " +
			"the answer of one stored turn back to the context it was produced with (the recall and run " +
			"linked to it), the stored entries that context came from (origins, with the turn that wrote " +
			"each) and ranks the pieces of context by how much each resembles the answer (suspects). What " +
			"was not linked is reported as unknown (honesty flags), never guessed. depth>1 also explains " +
			"the turns behind the origins.",
		readOnly: true, idempotent: true,
	},
	{
		name: "list_entries", op: "listEntries", title: "List a conversation's entries",
		description: "Call this to see what the memories hold for one conversation (messages, facts, " +
			"snapshots, beats), newest first; filter by memory, kind and tier. Pass the answer's " +
			"nextCursor as cursor for the next page. Reading changes nothing.",
		readOnly: true, idempotent: true,
	},
	{
		name: "forget_conversation", op: "forgetConversation", title: "Forget a conversation",
		description: "Call this only when the user asks to be forgotten or a conversation must be erased: it " +
			"deletes every entry every memory stored for the conversation (for this principal), in one " +
			"transaction, and answers how many were erased. Memory definitions stay; audit records (recall " +
			"receipts, run recordings) stay until their retention. It cannot be undone.",
		destructive: true, idempotent: true,
	},
	{
		name: "open_run", op: "openRun", title: "Open a run recording",
		description: "Call this at the start of a turn's run, before the model is called, to record what " +
			"the model is shown: give the conversationId and turn (and a runId of your choice, or one is " +
			"made up). Then append_events as the run goes, and finish_run at its end. A run linked to a " +
			"turn lets explain_turn show the exact context of each model call.",
	},
	{
		name: "append_events", op: "appendEvents", title: "Append events to a run",
		description: "Call this during a run to record its events in order, in batches of up to 1,000: " +
			"announce every piece of context shown to the model as a context.injected event (payload: " +
			"slot, source, sourceId — for a recalled piece, its injection id from recall — and iteration), " +
			"and the model calls as llm.request / llm.response. The answer says how many events the run " +
			"holds and how many were dropped.",
	},
	{
		name: "finish_run", op: "finishRun", title: "Finish a run",
		description: "Call this when the run ends: complete=true when it ran to its end, false when it was " +
			"abandoned. A finished run accepts no more events. Finishing again with the same complete is a " +
			"safe no-op.",
		idempotent: true,
	},
}

// recallText is the recall tool's text content: the system-prompt text of the recall.
func recallText(body []byte) string {
	var r struct {
		SystemPrompt string `json:"systemPrompt"`
	}
	if json.Unmarshal(body, &r) != nil {
		return string(body)
	}
	if strings.TrimSpace(r.SystemPrompt) == "" {
		return "(no memory recalled anything for this query)"
	}
	return r.SystemPrompt
}
