"""The writer's room: approved depicts statements onto Commons, one edit per file, audited.

The order of a write (``statement_writer.StatementWriter``, called by ``loop.write_approved``):
 1. re-read     the file page and its MediaInfo: exists, protection, {{bots}}, baserevid
 2. first check each pair still this writer's, and the safety rules as they are now
 3. plan        skip present / more specific / opted out; recover a lost edit (edit_group)
 4. throttle    wait out pywikibot's put throttle (edit_group.wait_put_throttle)
 5. last check  each pair still ours right before the request leaves (edit_send)
 6. send        noted in the queue first (unsettled), then one wbeditentity with the
                re-read's baserevid, sent once (one_shot); at most five a file an hour (edit_budget)
 7. record      every pair's outcome as a value, errors mapped in one place (outcomes)
 8. follow up   a decision that came too late, a twin statement removed (follow_up)
A run starts by settling the requests whose answer never came (``unsettled``). Beside it:
``revert`` (one removal edit per file of a batch), ``stop_page`` (the kill switch, read right
before every edit).

The room's front door imports nothing; import the modules themselves.
"""
