// Command agent-go is an agent loop on footprint's Go client: it defines its memories, and for
// each turn of a short support conversation recalls what to show the model, records what the
// model was shown, posts the finished turn with its evidence, and at the end explains its
// last answer back to the turn that caused it.
//
// The model is a stand-in (answer, below) so that the example runs anywhere; put your LLM call
// there. Run it against a server (`make run` in another terminal):
//
//	go run ./examples/agent-go                        # FOOTPRINT_URL, FOOTPRINT_API_KEY if set
//	go run ./examples/agent-go -conversation demo-2   # a fresh conversation
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/footprint/footprint/client"
)

func main() {
	conv := flag.String("conversation", "support-agent-go", "the conversation id")
	flag.Parse()
	server := os.Getenv("FOOTPRINT_URL")
	if server == "" {
		server = "http://127.0.0.1:8080"
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout, server, os.Getenv("FOOTPRINT_API_KEY"), *conv); err != nil {
		fmt.Fprintln(os.Stderr, "agent-go:", err)
		os.Exit(1)
	}
}

// script is the conversation: what the user says each turn.
var script = []string{
	"What is the refund window for damaged items?",
	"Do you ship to Norway?",
	"How long do refunds for damaged items take?",
}

// answer stands in for the model: it answers from the system prompt it is given when that
// holds an earlier answer to the same question, as a model would, and from its own
// (outdated) handbook otherwise. It also says which rule it followed, the turn's evidence.
func answer(systemPrompt, question string) (text string, decision client.Decision) {
	if strings.Contains(question, "refund") {
		if strings.Contains(systemPrompt, "30 days") {
			return "We refund damaged items within 30 days.", client.Decision{StageID: "policy", Chosen: "30-day window", Rule: client.Ptr("past decision")}
		}
		return "Damaged items are refunded within 30 days.", client.Decision{StageID: "policy", Chosen: "30-day window", Rule: client.Ptr("old handbook")}
	}
	return "Yes, we ship to Norway.", client.Decision{StageID: "shipping", Chosen: "ships to Norway"}
}

func run(ctx context.Context, out io.Writer, server, key, conv string) error {
	fp, err := client.New(server, client.Config{Key: key})
	if err != nil {
		return err
	}
	// 1. The memories: the conversation's last 20 messages, and the two past decisions closest
	// to the question (causal memory, cosine similarity above 0.2). Defined once per tenant: an
	// existing one is fine.
	for _, m := range []client.MemoryInput{
		{ID: "chat", Type: client.MemoryTypeEpisodic, Strategy: map[string]any{"kind": "window", "size": 20}},
		{ID: "why", Type: client.MemoryTypeCausal, Strategy: map[string]any{"kind": "topK", "topK": 2, "ranking": "vector", "threshold": 0.2}},
	} {
		_, err := fp.CreateMemoryWithResponse(ctx, nil, m)
		var pe *client.Error
		switch {
		case errors.As(err, &pe) && pe.Code == "memory-exists":
			fmt.Fprintf(out, "memory %s: already defined\n", m.ID)
		case err != nil:
			return fmt.Errorf("define memory %s: %w", m.ID, err)
		default:
			fmt.Fprintf(out, "memory %s: defined\n", m.ID)
		}
	}

	// 2. The turns.
	var last int
	for i, question := range script {
		turn := i + 1
		runID := fmt.Sprintf("%s-run-%d-%d", conv, turn, time.Now().UnixNano())
		// Recall at the start of the turn, linked to the turn and its run.
		rec, err := fp.RecallWithResponse(ctx, conv, nil, client.RecallInput{Query: &question, Turn: &turn, RunID: &runID})
		if err != nil {
			return fmt.Errorf("recall for turn %d: %w", turn, err)
		}
		recall := rec.JSON200
		// Record what the model is shown: one context.injected event per injection.
		if _, err := fp.OpenRunWithResponse(ctx, nil, client.RunInput{RunID: &runID, ConversationID: &conv, Turn: &turn}); err != nil {
			return fmt.Errorf("open run: %w", err)
		}
		var events []client.EventInput
		for _, inj := range recall.Injections {
			payload, _ := json.Marshal(map[string]any{"slot": "system", "source": "memory", "sourceId": inj.ID, "iteration": 1})
			events = append(events, client.EventInput{Type: "context.injected", Payload: payload})
		}
		reply, decision := answer(recall.SystemPrompt, question)
		events = append(events, client.EventInput{Type: "llm.request", Payload: json.RawMessage(`{"model":"stand-in","iteration":1}`)})
		if _, err := fp.AppendEventsWithResponse(ctx, runID, client.EventBatch{Events: events}); err != nil {
			return fmt.Errorf("append events: %w", err)
		}
		if _, err := fp.FinishRunWithResponse(ctx, runID, client.RunFinish{Complete: true}); err != nil {
			return fmt.Errorf("finish run: %w", err)
		}
		// Post the finished turn with its evidence, linked to its recall and run. The client
		// gives the POST an Idempotency-Key, so a retry cannot store the turn twice.
		res, err := fp.PostTurnWithResponse(ctx, conv, nil, client.TurnInput{
			Messages:  []client.Message{{Role: client.MessageRoleUser, Content: question}, {Role: client.MessageRoleAssistant, Content: reply}},
			Evidence:  &client.TurnEvidence{Decisions: []client.Decision{decision}},
			RecallIds: []client.RecallID{recall.RecallID},
			RunID:     &runID,
		})
		if err != nil {
			return fmt.Errorf("post turn %d: %w", turn, err)
		}
		if res.JSON201 == nil || res.JSON201.Turn == nil {
			return fmt.Errorf("post turn %d: nothing was written", turn)
		}
		last = *res.JSON201.Turn
		fmt.Fprintf(out, "turn %d: %q -> %q (recalled %d pieces, stored as turn %d)\n", turn, question, reply, len(recall.Injections), last)
	}

	// 3. Explain the last answer: the pieces of context it was given, ranked by resemblance,
	// and where the top suspect came from.
	ex, err := fp.ExplainTurnWithResponse(ctx, conv, last, &client.ExplainTurnParams{Depth: client.Ptr(2)})
	if err != nil {
		return fmt.Errorf("explain turn %d: %w", last, err)
	}
	e := ex.JSON200
	if len(e.Suspects) == 0 {
		fmt.Fprintf(out, "explain turn %d: no suspects\n", last)
		return nil
	}
	top := e.Suspects[0]
	fmt.Fprintf(out, "explain turn %d: top suspect %s (%s %.2f)\n", last, top.InjectionID, top.Strategy, top.Score)
	for _, o := range e.Origins {
		if o.InjectionID != top.InjectionID || o.Entry == nil {
			continue
		}
		said := ""
		if o.Entry.FinalContent != nil {
			said = *o.Entry.FinalContent
		}
		written := 0
		if o.Entry.Turn != nil {
			written = *o.Entry.Turn
		}
		fmt.Fprintf(out, "  origin: entry %s of memory %s, written by turn %d: %q\n", o.EntryID, o.MemoryID, written, said)
	}
	for _, earlier := range e.Earlier {
		if earlier.Answer.Decisions != nil {
			for _, d := range earlier.Answer.Decisions {
				rule := ""
				if d.Rule != nil {
					rule = " (rule: " + *d.Rule + ")"
				}
				fmt.Fprintf(out, "  turn %d decided %s: %s%s\n", earlier.Turn, d.StageID, d.Chosen, rule)
			}
		}
	}
	return nil
}
