package explain

import (
	"cmp"
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/footprint/footprint/internal/core"
	"github.com/footprint/footprint/internal/core/recall"
)

// The forward view of the backtrack: where an entry was used (the recall
// receipts that admitted it and the turns they were offered to), and the
// ablation reruns recorded for a turn.

// UsageStore is what the forward view needs from a store, besides Store.
// Implementations are safe for concurrent use.
type UsageStore interface {
	// RecallsAdmitting returns up to limit receipts of the namespace whose
	// AdmittedIDs include injectionID, newest first (by creation, then id),
	// after the opaque position after, and the position after the last one
	// ("" when there are no more).
	RecallsAdmitting(ctx context.Context, tenant, namespace, injectionID, after string, limit int) ([]recall.RecallResult, string, error)
	// TurnsLinking returns, for each of recallIDs that turns of the
	// namespace were posted with (their recallIds), those turns.
	TurnsLinking(ctx context.Context, tenant, namespace string, recallIDs []string) (map[string][]int, error)
	// Ablation returns one recorded rerun with the namespace and turn it was
	// recorded for; ErrNotFound for an unknown id or another tenant's.
	Ablation(ctx context.Context, tenant, id string) (namespace string, turn int, a Ablation, err error)
}

// EntryUse is one receipt that admitted an entry, and at what.
type EntryUse struct {
	RecallID  string
	CreatedAt time.Time
	Turn      int
	RunID     string
	Score     *float64
	Rank      int
	Threshold *float64
	// Turns are the turns the receipt was offered to, newest first: its own
	// Turn and every turn posted with it.
	Turns []int
}

// EntryUsage returns up to limit receipts of the conversation that admitted
// the entry, newest first, and the position of the next page ("" when
// none). The entry need not exist any more: receipts outlive it.
func (s *Service) EntryUsage(ctx context.Context, id core.Identity, memoryID, entryID, after string, limit int) ([]EntryUse, string, error) {
	tenant, ns := id.Tenant, id.Namespace()
	receipts, next, err := s.store.RecallsAdmitting(ctx, tenant, ns, recall.EntryInjectionID(memoryID, entryID), after, max(limit, 1))
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, len(receipts))
	for i, r := range receipts {
		ids[i] = r.RecallID
	}
	linking, err := s.store.TurnsLinking(ctx, tenant, ns, ids)
	if err != nil {
		return nil, "", err
	}
	out := make([]EntryUse, 0, len(receipts))
	for _, r := range receipts {
		u := EntryUse{RecallID: r.RecallID, CreatedAt: r.CreatedAt, Turn: r.Turn, RunID: r.RunID, Turns: []int{}}
		for _, mr := range r.Memories {
			if mr.MemoryID != memoryID {
				continue
			}
			for _, c := range mr.Evidence.Candidates {
				if c.ID == entryID && c.Admitted {
					u.Score, u.Rank, u.Threshold = c.Score, c.Rank, mr.Evidence.Threshold
				}
			}
		}
		if r.Turn > 0 {
			u.Turns = append(u.Turns, r.Turn)
		}
		for _, t := range linking[r.RecallID] {
			if !slices.Contains(u.Turns, t) {
				u.Turns = append(u.Turns, t)
			}
		}
		slices.SortFunc(u.Turns, func(a, b int) int { return cmp.Compare(b, a) })
		out = append(out, u)
	}
	return out, next, nil
}

// UsageTurns gathers the turns of uses, newest first, each once.
func UsageTurns(uses []EntryUse) []int {
	out := []int{}
	for _, u := range uses {
		for _, t := range u.Turns {
			if !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	slices.SortFunc(out, func(a, b int) int { return cmp.Compare(b, a) })
	return out
}

// ListAblations returns up to limit of a turn's recorded reruns, oldest
// first, after the position after, and the position of the next page (""
// when none).
func (s *Service) ListAblations(ctx context.Context, id core.Identity, turn int, after string, limit int) ([]Ablation, string, error) {
	all, err := s.store.Ablations(ctx, id.Tenant, id.Namespace(), turn)
	if err != nil {
		return nil, "", err
	}
	if after != "" {
		at, aid, ok := parseAblationPosition(after)
		if !ok {
			return nil, "", &core.ValidationError{Code: core.CodeInvalidField, Site: "listAblations", Path: "cursor", Detail: "`cursor` is not a position in this list."}
		}
		all = slices.DeleteFunc(all, func(a Ablation) bool {
			if c := a.CreatedAt.Compare(at); c != 0 {
				return c < 0
			}
			return a.ID <= aid
		})
	}
	limit = max(limit, 1)
	if len(all) <= limit {
		return all, "", nil
	}
	last := all[limit-1]
	return all[:limit], strconv.FormatInt(last.CreatedAt.UnixMicro(), 10) + ":" + last.ID, nil
}

func parseAblationPosition(p string) (time.Time, string, bool) {
	us, id, ok := strings.Cut(p, ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil {
		return time.Time{}, "", false
	}
	return time.UnixMicro(n).UTC(), id, true
}

// GetAblation returns one recorded rerun of a turn; ErrNotFound when the id
// was recorded for another turn, conversation or principal, or not at all.
func (s *Service) GetAblation(ctx context.Context, id core.Identity, turn int, ablationID string) (Ablation, error) {
	ns, t, a, err := s.store.Ablation(ctx, id.Tenant, ablationID)
	if err != nil {
		return Ablation{}, err
	}
	if ns != id.Namespace() || t != turn {
		return Ablation{}, &core.NotFoundError{What: "ablation", ID: ablationID}
	}
	return a, nil
}
