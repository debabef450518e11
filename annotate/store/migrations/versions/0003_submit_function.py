"""PostgreSQL: the common Submit as one server-side function, annotate_submit_and_next.

A Submit stores the answer, closes the annotator's assignment and reserves the next pair. Sent
as separate statements, each a round trip and several interpreter-lock handoffs in the app's
process, the client's CPU was what limited how many annotations per second many annotators
could save (benchmarks/README.md). The function does the common case in one call, which also
commits in the same round trip (autocommit), under the same rules as annotate/assignment.py:

- no open assignment for the submitted pair (a stale tab, a re-run after a lost
  acknowledgement), or a gold pair due for a study that has gold pairs: it raises SQLSTATE
  AN001 and changes nothing; the app then applies the full rules in Python;
- another open assignment, the quota reached or a qualification to pass: the answer is stored
  and no pair is reserved (new_id is null); the app applies the full rules in a second
  transaction, as next_assignment would;
- otherwise the least-covered real pair with room is reserved and assigned, with the same A/B
  coin and gold coin as chosen_position_for and gold_due.

SQLite has no server-side functions and no round trips: nothing changes there.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_FUNCTION = """
CREATE OR REPLACE FUNCTION annotate_submit_and_next(
    p_annotator integer, p_pair integer, p_now timestamp, p_gold_every integer,
    p_preference varchar, p_chosen_position varchar,
    p_correctness_chosen integer, p_relevance_chosen integer, p_helpfulness_chosen integer,
    p_correctness_rejected integer, p_relevance_rejected integer,
    p_helpfulness_rejected integer,
    p_main_reason varchar, p_comment text, p_seconds double precision,
    p_submitted_at timestamp, p_source varchar)
RETURNS TABLE (new_id integer, new_study integer, new_pair integer, new_position varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    rules record;
    closed integer;
    v_id integer;
    v_pair integer;
    v_position varchar;
BEGIN
    SELECT s.id, s.overlap_target, s.items_per_annotator, s.qualification_gold,
           (SELECT a.id FROM assignment a
             WHERE a.annotator_id = p_annotator AND a.status = 'active'
               AND a.pair_id <> p_pair
             ORDER BY a.assigned_at, a.id LIMIT 1) AS active_id
      INTO rules
      FROM study s JOIN annotator n ON n.study_id = s.id
     WHERE n.id = p_annotator;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'no annotator with id %', p_annotator USING ERRCODE = 'AN001';
    END IF;

    UPDATE assignment SET status = 'done', completed_at = p_now
     WHERE annotator_id = p_annotator AND pair_id = p_pair AND status = 'active';
    GET DIAGNOSTICS closed = ROW_COUNT;
    IF closed = 0 THEN
        RAISE EXCEPTION 'no open assignment' USING ERRCODE = 'AN001';
    END IF;

    INSERT INTO annotation (study_id, pair_id, annotator_id, preference, chosen_position,
                            correctness_chosen, relevance_chosen, helpfulness_chosen,
                            correctness_rejected, relevance_rejected, helpfulness_rejected,
                            main_reason, comment, seconds, submitted_at, source)
    VALUES (rules.id, p_pair, p_annotator, p_preference, p_chosen_position,
            p_correctness_chosen, p_relevance_chosen, p_helpfulness_chosen,
            p_correctness_rejected, p_relevance_rejected, p_helpfulness_rejected,
            p_main_reason, p_comment, p_seconds, p_submitted_at, p_source)
    ON CONFLICT (study_id, pair_id, annotator_id) DO UPDATE SET
        preference = excluded.preference, chosen_position = excluded.chosen_position,
        correctness_chosen = excluded.correctness_chosen,
        relevance_chosen = excluded.relevance_chosen,
        helpfulness_chosen = excluded.helpfulness_chosen,
        correctness_rejected = excluded.correctness_rejected,
        relevance_rejected = excluded.relevance_rejected,
        helpfulness_rejected = excluded.helpfulness_rejected,
        main_reason = excluded.main_reason, comment = excluded.comment,
        seconds = excluded.seconds, submitted_at = excluded.submitted_at,
        source = excluded.source;

    IF rules.active_id IS NULL
       AND COALESCE(rules.qualification_gold, 0) = 0
       AND (rules.items_per_annotator IS NULL
            OR (SELECT count(*) FROM assignment a
                 WHERE a.annotator_id = p_annotator AND a.status = 'done')
               < rules.items_per_annotator) THEN
        -- the least-covered real pair with room that this annotator has not been given;
        -- SKIP LOCKED: take the first one nobody is reserving right now
        WITH reserved AS (
            UPDATE pair SET n_assigned = n_assigned + 1
             WHERE id = (SELECT p.id FROM pair p
                          WHERE p.study_id = rules.id AND p.is_gold = FALSE
                            AND p.n_assigned < rules.overlap_target
                            AND NOT EXISTS (SELECT 1 FROM assignment a
                                             WHERE a.study_id = p.study_id AND a.pair_id = p.id
                                               AND a.annotator_id = p_annotator)
                          ORDER BY p.n_assigned, p.position LIMIT 1
                          FOR NO KEY UPDATE OF p SKIP LOCKED)
               AND n_assigned < rules.overlap_target
            RETURNING id)
        INSERT INTO assignment (study_id, pair_id, annotator_id, chosen_position, status,
                                assigned_at, completed_at, draft)
        SELECT rules.id, reserved.id, p_annotator,
               -- chosen_position_for: first byte of sha256("study:pair:annotator"), odd = A
               CASE WHEN get_byte(sha256(convert_to(
                        rules.id::text || ':' || reserved.id::text || ':' || p_annotator::text,
                        'UTF8')), 0) & 1 = 1 THEN 'A' ELSE 'B' END,
               'active', p_now, NULL, NULL
          FROM reserved
        RETURNING assignment.id, assignment.pair_id, assignment.chosen_position
             INTO v_id, v_pair, v_position;

        -- gold_due: the first four bytes of sha256("gold:annotator:pair") divisible by
        -- p_gold_every; a gold pair then comes first, which the full rules handle
        IF v_id IS NOT NULL
           AND ('x' || encode(substring(sha256(convert_to(
                   'gold:' || p_annotator::text || ':' || v_pair::text, 'UTF8'))
                   FROM 1 FOR 4), 'hex'))::bit(32)::bigint % p_gold_every = 0
           AND EXISTS (SELECT 1 FROM pair g WHERE g.study_id = rules.id AND g.is_gold) THEN
            RAISE EXCEPTION 'gold pair due' USING ERRCODE = 'AN001';
        END IF;
    END IF;

    RETURN QUERY SELECT v_id, rules.id, v_pair, v_position;
END
$$
"""


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_FUNCTION)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS annotate_submit_and_next")
