-- ResumedbyP1 as a semi-join on a witness: for each mailbox, P1's first
-- send to it is the least that decides S precede end of W for every wait.
WITH first AS (
  SELECT Mailbox, min("at") AS "at" FROM SendMessage WHERE Process = 'P1' GROUP BY Mailbox
)
SELECT DISTINCT W.Process, nullif(W."to", 9223372036854775807) AS "at"
FROM Waiting W JOIN first F ON F.Mailbox = W.Mailbox
WHERE F."at" < W."to"
