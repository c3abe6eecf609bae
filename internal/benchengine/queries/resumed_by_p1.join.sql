-- ResumedbyP1 as the naive join: every (S, W) pair on a mailbox, filtered.
-- S precede end of W: S is [at, at+1), end of W the event at W.to, so
-- at + 1 <= W.to; an open W ends at forever, and the result is an event there.
SELECT DISTINCT W.Process, nullif(W."to", 9223372036854775807) AS "at"
FROM Waiting W JOIN SendMessage S ON S.Mailbox = W.Mailbox
WHERE S.Process = 'P1' AND S."at" < W."to"
