package embed

// thesaurusGroups are the synonym groups of the builtin model, one a
// line, comma-separated; a term is one word or two. They are the words
// work items, comments and pages use for the same thing in software
// work, written as a general list (not fitted to any test set): access,
// failure, speed, data, interface, lifecycle and infrastructure terms.
const thesaurusGroups = `
# access
login, log in, logon, sign in, signin, authenticate, authentication, auth, credentials, sso, single sign
logout, log out, sign out, signout, logoff
signup, sign up, register, registration, enroll, onboarding, create account
password, passphrase, passcode, pin
reset, recover, recovery, forgot, forgotten
permission, access, authorization, authorize, role, privilege, rbac, acl, forbidden, unauthorized, denied
token, session, cookie, jwt
account, profile, user
two factor, 2fa, mfa, otp, authenticator
# failure
crash, crashes, panic, segfault, abort, dies, fatal, killed, core dump
freeze, hang, hangs, stuck, unresponsive, frozen, deadlock, spinner, spinning
error, failure, fail, exception, fault, broken, not work, doesn't work, malfunction
bug, defect, regression, glitch, issue, problem
wrong, incorrect, invalid, bad, mismatch, inaccurate
missing, absent, disappear, vanish, lost, gone, empty, blank
duplicate, duplicated, twice, double, repeated, doubled
timeout, timed out, time out, expire, expiry, expired
leak, leaking, memory leak, oom, out of memory
flaky, intermittent, sporadic, random, occasionally, sometimes
corrupt, corruption, garbled, mangled, damaged, truncate, truncated
warning, alert, alarm
# speed and load
slow, slowness, sluggish, lag, laggy, latency, delay, delayed, performance, perf, takes forever, takes long, sluggish
fast, quick, speed, speedup, faster, optimize, optimise, optimization
load, loading, render, rendering, paint, display
cpu, processor, compute
memory, ram, heap
disk, storage, volume, space
cache, caching, cached, memoize
scale, scaling, capacity, throughput, load balancing
# data
delete, remove, erase, drop, purge, destroy, wipe, clear
create, add, new, make, insert, generate
update, edit, modify, change, alter, amend, rename
save, persist, store, write, submit
read, fetch, retrieve, get, load data
import, upload, ingest
export, download, dump, backup
sync, synchronize, synchronization, replicate, replication, mirror
search, find, lookup, query, filter
sort, order, ordering, sorting, rank
list, table, grid
field, column, attribute, property
record, row, entry, item
file, attachment, document, upload
image, picture, photo, avatar, thumbnail, icon
date, time, timestamp, timezone, calendar, deadline
count, number, total, counter, tally
email, e mail, mail, inbox, message, notification, notify, alert email
webhook, callback, hook
api, endpoint, rest, route, request
database, db, sql, postgres, mysql, sqlite, query
schema, migration, migrate
config, configuration, setting, settings, preference, option
log, logging, logs, trace, tracing
metric, metrics, telemetry, monitoring, dashboard, graph, chart
report, summary, analytics, statistics, stats
# interface
button, link, control, toggle, checkbox, switch
page, screen, view, window, panel, dialog, modal, popup
menu, dropdown, select, picker, navbar, navigation, sidebar
form, input, textbox, text field
click, tap, press
scroll, scrolling, scrollbar
mobile, phone, ios, android, app, tablet
browser, chrome, firefox, safari, edge, web
dark mode, theme, color, colour, contrast, style, css
font, text, label, typography, wording, copy
layout, alignment, misaligned, overlap, overlapping, responsive, overflow
translation, localization, locale, language, i18n, l10n
accessibility, a11y, screen reader, keyboard navigation
tooltip, hint, help text
# lifecycle and work
deploy, deployment, release, ship, rollout, roll out, publish
rollback, roll back, revert, undo, downgrade
upgrade, bump, update version
build, compile, compilation, bundle
test, tests, testing, spec, unit test, ci, pipeline
documentation, docs, readme, guide, manual, wiki, runbook, how to
feature, enhancement, improvement, request, proposal, idea
refactor, cleanup, clean up, tidy, restructure, rewrite
investigate, debug, diagnose, triage, look into, root cause
fix, patch, resolve, repair, hotfix, workaround
customer, client, user, tenant, subscriber
team, group, organization, org, workspace
invite, invitation, share, sharing, collaborator
payment, billing, invoice, charge, checkout, subscription, card, refund, pay
price, pricing, plan, tier, quota, limit, rate limit
security, vulnerability, cve, exploit, xss, injection, csrf
encrypt, encryption, tls, ssl, https, certificate, cert
server, host, node, instance, machine, vm
container, docker, kubernetes, k8s, pod, cluster
network, connection, connectivity, socket, dns, proxy, firewall, offline, online
queue, job, worker, background job, cron, scheduled, schedule, task
retry, retries, backoff, resend
startup, boot, launch, start, open app
shutdown, shut down, stop, exit, quit, close
install, installer, setup, set up
crashloop, restart, restarts, reboot
`
