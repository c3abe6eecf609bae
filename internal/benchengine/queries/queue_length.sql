-- The paper's queue length: for every mailbox over its lifetime, the number of
-- waits on it at each instant, as maximal intervals of constant value (0 where
-- none). A sweep of +1/-1 per wait gives the steps of the count; each step is
-- cut to the mailbox's lifetime; equal neighbours are coalesced.
WITH d AS (
  SELECT Mailbox, "from" AS t, 1 AS d FROM Waiting
  UNION ALL SELECT Mailbox, "to", -1 FROM Waiting WHERE "to" < 9223372036854775807
  UNION ALL SELECT Mailbox, (-9223372036854775808)::BIGINT, 0 FROM Mailbox
),
p AS (SELECT Mailbox, t, sum(d) AS d FROM d GROUP BY Mailbox, t),
s AS (
  SELECT Mailbox, t AS f,
         lead(t, 1, 9223372036854775807) OVER (PARTITION BY Mailbox ORDER BY t) AS e,
         sum(d) OVER (PARTITION BY Mailbox ORDER BY t ROWS UNBOUNDED PRECEDING) AS n
  FROM p
),
j AS (
  SELECT m.Mailbox, s.n AS Length, greatest(s.f, m."from") AS f, least(s.e, m."to") AS t
  FROM Mailbox m JOIN s ON s.Mailbox = m.Mailbox AND s.f < m."to" AND m."from" < s.e
),
mm AS (
  SELECT *, max(t) OVER (PARTITION BY Mailbox, Length ORDER BY f, t
                         ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
  FROM j
),
g AS (
  SELECT *, sum(CASE WHEN reach >= f THEN 0 ELSE 1 END)
              OVER (PARTITION BY Mailbox, Length ORDER BY f, t ROWS UNBOUNDED PRECEDING) AS island
  FROM mm
)
SELECT Mailbox, Length, min(f) AS "from", nullif(max(t), 9223372036854775807) AS "to"
FROM g GROUP BY Mailbox, Length, island
