-- +goose Up
-- Explicit links a turn was posted with: its run and the recall receipts it used. Explain
-- reports what was not linked as unknown; it never infers a link.
CREATE TABLE turn_links (
    tenant     text NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    turn       integer NOT NULL CHECK (turn >= 1),
    run_ids    text[] NOT NULL DEFAULT '{}',
    recall_ids text[] NOT NULL DEFAULT '{}',
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, namespace, turn)
);

-- Recorded reruns of a turn without some injected pieces (ablations); explain derives the
-- suspects' verdicts from them.
CREATE TABLE ablations (
    tenant     text NOT NULL,
    id         text COLLATE "C" NOT NULL,
    namespace  text COLLATE "C" NOT NULL,
    turn       integer NOT NULL CHECK (turn >= 1),
    excluded   text[] NOT NULL,
    answer     text NOT NULL,
    flipped    boolean NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE INDEX ablations_turn_idx ON ablations (tenant, namespace, turn);

-- When a conversation was forgotten, so that explain can say an origin entry was forgotten
-- rather than merely missing. Only the namespace and the time are kept: nothing of the data.
CREATE TABLE forgotten_namespaces (
    tenant       text NOT NULL,
    namespace    text COLLATE "C" NOT NULL,
    forgotten_at timestamptz NOT NULL,
    PRIMARY KEY (tenant, namespace)
);

-- +goose Down
DROP TABLE IF EXISTS forgotten_namespaces;
DROP TABLE IF EXISTS ablations;
DROP TABLE IF EXISTS turn_links;
