-- P1's sends: σ Process = 'P1', π Mailbox; events at one chronon are one tuple.
SELECT DISTINCT Mailbox, "at" FROM SendMessage WHERE Process = 'P1'
