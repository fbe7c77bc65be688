package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
)

// sizes prints how big a recall's answer and its stored receipt are (issue 19, item 15): the
// bytes of the HTTP answer's body over up to 200 of the regime's queries, and the bytes of
// every receipt body the run stored in the regime's namespaces (the benchmark's own receipts:
// those of the measured sides and of the breakdown).
func (b *bench) sizes(ctx context.Context, qs []query, conversation func(q query) string, memory string) error {
	qs = qs[:min(len(qs), 200)]
	var answers []int
	for _, q := range qs {
		body, _ := json.Marshal(map[string]any{"query": q.text, "memories": []string{memory}})
		raw, err := b.conn.Post("/v1/conversations/"+url.PathEscape(conversation(q))+"/recall", body, http.StatusOK)
		if err != nil {
			return err
		}
		answers = append(answers, len(raw))
	}
	var receipts []int
	rows, err := b.pool.Query(ctx, `SELECT octet_length(body) FROM recalls WHERE position(convert_to($1, 'UTF8') in body) > 0`, `"memoryId":"`+memory+`"`)
	if err != nil {
		return err
	}
	for rows.Next() {
		var n int
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		receipts = append(receipts, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Printf("answer and receipt sizes: HTTP answer body %s bytes (%d recalls); stored receipt body %s bytes (%d receipts)\n",
		median(answers), len(answers), median(receipts), len(receipts))
	return nil
}

// median prints the median of xs and their range.
func median(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return fmt.Sprintf("median %d (%d–%d)", s[len(s)/2], s[0], s[len(s)-1])
}
