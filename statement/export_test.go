package statement

// SetBeforeRewriteCommit makes every compaction (rewrite_data_files,
// rewrite_position_delete_files) call f after its files are written and
// before it commits (nil: nothing), for the tests in
// package statement_test that race a commit against it.
func SetBeforeRewriteCommit(f func()) { testHookBeforeRewriteCommit = f }
