# pywikibot settings for wikivel-bot. Copy to user-config.py in the directory named by
# $PYWIKIBOT_DIR (or the working directory) and fill in the account. Only pywikibot's own
# settings belong here; wikivel-bot's settings live in wikivel.toml.
# ruff: noqa  (pywikibot executes this file with its own globals)

# The wiki: Wikimedia Commons. For the approval trial use mylang = 'test' (test-commons).
family = 'commons'
mylang = 'commons'

# The bot account (Commons:Bots asks for a separate account with "bot" in its name), and the
# operator's own account for anything done by hand.
usernames['commons']['commons'] = 'WikivelBot'
usernames['commons']['test'] = 'WikivelBot'
usernames['wikidata']['wikidata'] = 'WikivelBot'

# A bot password (Special:BotPasswords) kept out of this file. user-password.py holds one
# line:  ('WikivelBot', BotPassword('wikivel', 'the-generated-password'))
# and must be readable by the bot's user only (chmod 600).
password_file = 'user-password.py'

# Seconds between two edits. Recent bot approvals on Commons state about 6 edits/minute;
# wikivel-bot's writer waits at least this long between writes.
put_throttle = 10

# Ask the servers to refuse our edits while replication lag exceeds 5 s (Wikimedia
# policy for bots); pywikibot waits and retries. (pywikibot 8 renamed `maxlag` to
# `write_maxlag`; the old name only earns a warning.)
write_maxlag = 5

# Retries for transient API errors, and the waits between them (seconds).
max_retries = 15
retry_wait = 5
retry_max = 120

# Identify the bot and its operator in every request (Wikimedia User-Agent policy).
user_agent_description = 'wikivel-bot (operator: User:YourName)'

# Logs go to ./logs; keep them for audits of what the bot did.
log = ['*']
