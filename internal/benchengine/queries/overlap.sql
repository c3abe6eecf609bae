-- Who ran while each process waited: the intersection of every overlapping
-- (Waiting, RunningOn) pair, coalesced per (Waiter, Runner) — value-equivalent
-- intervals that overlap or meet are merged (gaps and islands).
-- DuckDB's planner misjudges the sizes of the CSV views and picks a
-- piecewise merge join on one inequality (quadratic: 15 s at 0.1M tuples);
-- with the threshold at 0 it runs its IEJoin on both (0.1 s).
SET merge_join_threshold = 0;
WITH j AS (
  SELECT w.Process AS Waiter, r.Process AS Runner,
         greatest(w."from", r."from") AS f, least(w."to", r."to") AS t
  FROM Waiting w JOIN RunningOn r ON w."from" < r."to" AND r."from" < w."to"
),
m AS (
  SELECT *, max(t) OVER (PARTITION BY Waiter, Runner ORDER BY f, t
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM j
),
g AS (
  SELECT *, sum(CASE WHEN reach >= f THEN 0 ELSE 1 END)
              OVER (PARTITION BY Waiter, Runner ORDER BY f, t ROWS UNBOUNDED PRECEDING) AS island
  FROM m
)
SELECT Waiter, Runner, min(f) AS "from", nullif(max(t), 9223372036854775807) AS "to"
FROM g GROUP BY Waiter, Runner, island
