-- ResumedbyP1 as a semi-join: each wait is kept if some send of P1 to its
-- mailbox precedes its end (S appears in no target and no valid clause).
SELECT DISTINCT W.Process, nullif(W."to", 9223372036854775807) AS "at"
FROM Waiting W
WHERE EXISTS (SELECT 1 FROM SendMessage S
              WHERE S.Mailbox = W.Mailbox AND S.Process = 'P1' AND S."at" < W."to")
