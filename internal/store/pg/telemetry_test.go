package pg

import (
	"context"
	"testing"
)

func TestStatementName(t *testing.T) {
	t.Parallel()
	for sql, want := range map[string]string{
		"BEGIN":           "BEGIN",
		lockNamespacesSQL: "SELECT pg_advisory_xact_lock",
		genericPlanSQL:    "SELECT set_config",
		"INSERT INTO entries (\n\ttenant, id) VALUES ($1, $2)":             "INSERT entries",
		"UPDATE runs SET next_index = $3 WHERE tenant = $1":                "UPDATE runs",
		"DELETE FROM run_events WHERE tenant = $1":                         "DELETE run_events",
		"SELECT model, dims FROM embedding_fingerprints WHERE tenant = $1": "SELECT embedding_fingerprints",
		"  select 1": "SELECT 1",
	} {
		if got := statementName(context.Background(), sql); got != want {
			t.Errorf("statementName(%.40q) = %q, want %q", sql, got, want)
		}
	}
}
