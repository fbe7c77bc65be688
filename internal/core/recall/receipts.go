package recall

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
)

// EntryInjectionID names one stored entry as a per-chunk injection, a
// context piece, an origin and recall's `exclude` name it:
// memory:<memoryId>#<entryId>.
func EntryInjectionID(memoryID, entryID string) string {
	return "memory:" + memoryID + "#" + entryID
}

// AdmittedIDs are the injection ids of every entry the recall admitted, in
// receipt order (by memory, then by the memory's candidate order): the
// entries it offered, whether injected per chunk or within a whole-memory
// injection. Stores index receipts by them.
func (r RecallResult) AdmittedIDs() []string {
	out := []string{}
	for _, mr := range r.Memories {
		for _, c := range mr.Evidence.Candidates {
			if c.Admitted {
				out = append(out, EntryInjectionID(mr.MemoryID, c.ID))
			}
		}
	}
	return out
}

// RecallQuery selects a page of one conversation's receipts, newest first.
type RecallQuery struct {
	Tenant    string
	Namespace string
	// Turn, when above 0, keeps the receipts recorded for that turn and
	// those the turn was posted with (its recallIds).
	Turn int
	// After is an opaque position from a previous page ("" = the first).
	After string
	Limit int
}

// RecallRecord is one receipt in brief, as a store lists it.
type RecallRecord struct {
	ID        string
	Turn      int
	RunID     string
	CreatedAt time.Time
	QueryHash string
	// Admitted are the receipt's AdmittedIDs.
	Admitted []string
}

// ReceiptStore is what listing receipts needs from a store. Implementations
// are safe for concurrent use.
type ReceiptStore interface {
	// ListRecalls returns up to q.Limit receipts of q.Namespace, newest
	// first (by creation, then id), after q.After, and the position after
	// the last one ("" when there are no more).
	ListRecalls(ctx context.Context, q RecallQuery) ([]RecallRecord, string, error)
}

// ListRecalls returns a page of a conversation's recall receipts, newest
// first, and the position of the next page ("" when none).
func (s *Service) ListRecalls(ctx context.Context, q RecallQuery) ([]RecallRecord, string, error) {
	q.Limit = max(q.Limit, 1)
	return s.store.ListRecalls(ctx, q)
}

// ReceiptPosition is a receipt's place in newest-first order, as the opaque string a page's
// next position is: its creation in microseconds (Postgres's precision) and its id. Both
// stores write and read positions with it, so a position means the same on either.
func ReceiptPosition(at time.Time, id string) string {
	return strconv.FormatInt(at.UnixMicro(), 10) + ":" + id
}

// ParseReceiptPosition reads a ReceiptPosition back; anything else is a validation error at
// `after`.
func ParseReceiptPosition(p string) (time.Time, string, error) {
	us, id, ok := strings.Cut(p, ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return time.Time{}, "", &core.ValidationError{Code: core.CodeInvalidField, Path: "after", Detail: "not a position returned by a previous page"}
	}
	return time.UnixMicro(n).UTC(), id, nil
}
