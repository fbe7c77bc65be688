package pg

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/footprint/footprint/internal/core"
)

// Idempotent creates other than turns (memories, runs, documents, ablations): the key is
// claimed with claimKey, the one mechanism turns use (entries.go), inside the create's own
// transaction, and the answer is stored with the claim before COMMIT. A duplicate in flight
// waits on the claim's row lock; if the first request rolls back, the duplicate claims the key
// and creates.

// inOnce runs fn in a transaction that, when once is set, first claims its key: a committed
// claim of the same request makes fn not run and sets once.Replay; another request's is
// core.ErrKeyReused. fn's error is returned as it is (after rollback).
func (s *Store) inOnce(ctx context.Context, tenant string, once *core.Once, fn func(pgx.Tx) error) error {
	return s.tx(ctx, func(tx pgx.Tx) error {
		if once == nil {
			return fn(tx)
		}
		once.Replay = nil
		replay, err := claimKey(ctx, tx, nil, tenant, once.Claim, once.Now) // s.tx has begun it
		if err != nil {
			return err
		}
		if replay != nil {
			once.Replay = replay
			return nil
		}
		if err := fn(tx); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `UPDATE idempotency_keys SET status = 200, response = $3 WHERE tenant = $1 AND key = $2`,
			tenant, once.Claim.Key, once.Response)
		return err
	})
}
