-- +goose Up
-- Turn writes are serialised per namespace by a transaction-scoped advisory lock on a 64-bit
-- hash of (tenant, namespace) (internal/store/pg/entries.go, lockNamespaceSQL) instead of a
-- row lock on a conversations row. The row lock cost every turn an upsert of that row and a
-- tuple lock, which writes WAL and dirties a page; the advisory lock lives in shared memory.
-- A hash collision between two namespaces only makes their writes wait for each other.
DROP TABLE conversations;

-- +goose Down
CREATE TABLE conversations (
    tenant     text NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, namespace)
);
INSERT INTO conversations (tenant, namespace)
    SELECT DISTINCT tenant, namespace FROM entries WHERE namespace <> '';
