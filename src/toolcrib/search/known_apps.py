"""Known apps and connectors (SPEC R-5.11).

A query that names a known app none of the caller's visible accounts or connectors carries gets
no cards and ``not_connected: [app]``, so the model can tell the user instead of calling a tool
of another app. Such a word is never typo-matched to another word ("notion" is not "note").

One entry a line: ``canonical | alias | alias``. Names are matched as whole word sequences after
the tokenizer (``Cal.com`` -> ``cal com``). A leading ``~`` marks a name that is also an ordinary
English word (Linear, Zoom, Box, Segment, Indeed...): written capitalized and not as the query's
first word it names the app for certain ("create a Linear issue"); written otherwise it only may
("create a linear issue", "linear regression"), and the index decides from its evidence: when the
tool it would return does not match that word, the word named the app (see ``SearchIndex``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from toolcrib.search.tokenize import raw_words

__all__ = [
    "KnownApp",
    "app_tokens",
    "carries",
    "known_apps",
    "label_names",
    "mentioned_apps",
    "possible_apps",
    "tool_names",
]

_REGISTRY = """
jira | jira software | jira cloud
~confluence
trello
bitbucket
asana
~linear | linear app
~notion
~monday | monday.com
clickup
~basecamp
smartsheet
airtable
coda | coda.io
wrike
todoist
ticktick
evernote
~obsidian
onenote | microsoft onenote
~slack
~discord
microsoft teams | ms teams | ~teams
~zoom | zoom meetings
webex | cisco webex
google meet
skype
~telegram
whatsapp
~signal | signal messenger
wechat | weixin
line messenger
viber
mattermost
rocket.chat
intercom
zendesk
freshdesk
freshservice
~help scout | helpscout
front app
~drift
~crisp
gmail
outlook.com | microsoft outlook | ~outlook
yahoo mail
protonmail | proton mail
fastmail
mailchimp
sendgrid
mailgun
~postmark
brevo | sendinblue
klaviyo
constant contact
convertkit
google calendar | gcal
calendly
cal.com
google drive | gdrive
google docs
google sheets
google slides
google forms
google keep
google photos
google analytics
google ads
google search console
google cloud | gcp | google cloud platform
google tasks
google contacts
youtube
dropbox
~box | box.com
onedrive | microsoft onedrive
sharepoint | microsoft sharepoint
icloud
microsoft word | ms word | ~word
microsoft excel | ms excel | ~excel
microsoft powerpoint | powerpoint
microsoft 365 | office 365
microsoft to do
stripe
paypal
square payments | squareup
braintree
adyen
~plaid
~wise | transferwise
venmo
revolut
quickbooks | quickbooks online
xero
freshbooks
netsuite | oracle netsuite
sage accounting
~gusto
rippling
bamboohr
~workday
adp
expensify
brex
~ramp
bill.com
chargebee
recurly
~paddle
lemon squeezy
salesforce | sfdc
hubspot
pipedrive
zoho | zoho crm
dynamics 365 | microsoft dynamics
close crm
copper crm
attio
affinity crm
shopify
woocommerce
magento
bigcommerce
etsy
ebay
~amazon | amazon.com
amazon seller central
walmart
doordash
uber eats | ubereats
grubhub
instacart
~uber
lyft
airbnb
booking.com
expedia
tripadvisor
~kayak
skyscanner
opentable
~yelp
twitter
x.com
facebook | fb
instagram
linkedin
tiktok
snapchat
~pinterest
reddit
threads app
~mastodon
bluesky
tumblr
~medium | medium.com
substack
wordpress
ghost cms
webflow
wix
squarespace
contentful
sanity cms
strapi
hootsuite
~buffer | buffer app
later.com
canva
figma
sketch app
adobe photoshop | photoshop
adobe illustrator | ~illustrator
adobe acrobat | ~acrobat
adobe premiere
lightroom
miro
lucidchart
whimsical
invision
~framer
github | gh
gitlab
azure devops | ~ado
jenkins
circleci
travis ci
github actions
vercel
netlify
heroku
render.com
fly.io
railway app
cloudflare
digitalocean
linode
aws | amazon web services | ec2 | s3 | dynamodb | cloudwatch | route 53 | amazon rds
azure | microsoft azure
firebase
supabase
mongodb | mongo atlas
mysql
postgresql | postgres | psql
sqlite
redis
elasticsearch | ~elastic
opensearch
~snowflake
bigquery
databricks
~redshift
clickhouse
~pinecone
weaviate
qdrant
neo4j
cassandra
kafka | apache kafka
rabbitmq
docker | docker hub
kubernetes | k8s
terraform
ansible
datadog
new relic
~sentry
pagerduty
opsgenie
grafana
~prometheus
splunk
~honeycomb
statuspage
launchdarkly
postman
npm
pypi
~maven
stack overflow | stackoverflow
hacker news
wikipedia
arxiv
google scholar
pubmed
wolfram alpha | wolframalpha
google maps
apple maps
openstreetmap | osm
waze
spotify
apple music
soundcloud
netflix
~twitch
vimeo
~steam
epic games
playstation
xbox
openai | chatgpt
anthropic | claude
~gemini | google gemini
~perplexity
midjourney
stable diffusion
hugging face | huggingface
~replicate
elevenlabs
deepl
google translate
grammarly
otter.ai | ~otter
fireflies.ai | ~fireflies
~loom
typeform
surveymonkey
jotform
docusign
pandadoc
hellosign | dropbox sign
adobe sign
1password
lastpass
bitwarden
okta
auth0
twilio
vonage
plivo
messagebird
aircall
ringcentral
dialpad
zapier
make.com | integromat
ifttt
n8n
~segment
mixpanel
~amplitude
heap analytics
hotjar
fullstory
~looker
~tableau
power bi | powerbi
metabase
apple notes
apple reminders
apple calendar
things 3
home assistant
philips hue
~nest
~ring
tesla
~fitbit
~strava
garmin
myfitnesspal
~peloton
duolingo
coursera
udemy
khan academy
goodreads
~kindle
~audible
~pocket
instapaper
raindrop.io
feedly
readwise
roam research
logseq
craft docs
bear notes
dynalist
workflowy
~harvest
toggl
clockify
rescuetime
calendly
~doodle
eventbrite
~meetup
ticketmaster
greenhouse
~lever
workable
ashby
~indeed
glassdoor
upwork
fiverr
coinbase
binance
~kraken
robinhood
etrade | e*trade
interactive brokers
schwab | charles schwab
~fidelity
~vanguard
bloomberg
~alpaca
polygon.io
alpha vantage
weather.com
accuweather
~ups
fedex
usps
dhl
shipstation
zillow
redfin
"""


@dataclass(frozen=True, slots=True)
class KnownApp:
    """One known app: its canonical name and every word sequence that names it."""

    canonical: str
    names: tuple[tuple[str, ...], ...]
    ambiguous_names: tuple[tuple[str, ...], ...]


def app_tokens(name: str) -> tuple[str, ...]:
    return tuple(raw_words(name, camel=False))


def _parse(line: str) -> KnownApp:
    parts = [p.strip() for p in line.split("|")]
    canonical = parts[0].lstrip("~")
    plain = tuple(app_tokens(p) for p in parts if not p.startswith("~"))
    ambiguous = tuple(app_tokens(p[1:]) for p in parts if p.startswith("~"))
    return KnownApp(canonical, plain, ambiguous)


@cache
def known_apps() -> tuple[KnownApp, ...]:
    lines = [line for line in _REGISTRY.splitlines() if line.strip()]
    return tuple(_parse(line) for line in lines)


@cache
def _by_first_word() -> dict[str, list[tuple[tuple[str, ...], KnownApp, bool]]]:
    table: dict[str, list[tuple[tuple[str, ...], KnownApp, bool]]] = {}
    for app in known_apps():
        for names, ambiguous in ((app.names, False), (app.ambiguous_names, True)):
            for seq in names:
                if seq:
                    table.setdefault(seq[0], []).append((seq, app, ambiguous))
    for entries in table.values():
        entries.sort(key=lambda e: -len(e[0]))
    return table


def _capitalized_words(query: str) -> list[bool]:
    """For each raw word of the query: was it written with a capital, and not first?"""
    flags: list[bool] = []
    for i, token in enumerate(query.split()):
        stripped = token.strip("\"'()[]{},.;:!?")
        parts = raw_words(stripped, camel=False)
        flags.extend([i > 0 and stripped[:1].isupper()] * len(parts))
    return flags


def mentioned_apps(query: str) -> list[tuple[KnownApp, tuple[str, ...]]]:
    """Known apps the query names for certain, with the word sequence that named each (longest
    match): a name that is not an ordinary word, or an ordinary one written capitalized, not first."""
    return [(app, seq) for app, seq, certain in _mentions(query) if certain]


def possible_apps(query: str) -> list[tuple[KnownApp, tuple[str, ...]]]:
    """Known apps whose name is an ordinary word the query writes in lower case ("create a linear
    issue", "linear regression"): the engine decides from its evidence whether it names the app."""
    return [(app, seq) for app, seq, certain in _mentions(query) if not certain]


def _mentions(query: str) -> list[tuple[KnownApp, tuple[str, ...], bool]]:
    tokens = raw_words(query, camel=False)
    caps = _capitalized_words(query)
    if len(caps) != len(tokens):
        caps = [False] * len(tokens)
    found: list[tuple[KnownApp, tuple[str, ...], bool]] = []
    i = 0
    while i < len(tokens):
        step = 1
        for seq, app, ambiguous in _by_first_word().get(tokens[i], []):
            if tuple(tokens[i : i + len(seq)]) != seq:
                continue
            if all(app is not other for other, _, _ in found):
                found.append((app, seq, not ambiguous or caps[i]))
            step = len(seq)
            break
        i += step
    return found


def label_names(*labels: str) -> frozenset[str]:
    """Every run of consecutive words of the labels, joined (``google-maps`` -> ``google``,
    ``maps``, ``googlemaps``): what an account or connector label can be said to carry."""
    names: set[str] = set()
    for label in labels:
        for camel in (True, False):
            parts = raw_words(label, camel=camel)
            for i in range(len(parts)):
                for j in range(i + 1, len(parts) + 1):
                    names.add("".join(parts[i:j]))
    return frozenset(names)


def tool_names(name: str) -> frozenset[str]:
    """What a tool's own name can be said to carry: runs of up to three of its words, joined
    (``slack_post_message`` -> ``slack``, ``slackpost``, ...; ``Zillow`` -> ``zillow``)."""
    parts = raw_words(name, camel=False)
    return frozenset(
        "".join(parts[i:j]) for i in range(len(parts)) for j in range(i + 1, min(i + 3, len(parts)) + 1)
    )


def carries(names: frozenset[str], app: KnownApp) -> bool:
    """Whether labels with these ``label_names`` carry ``app`` (under any of its names)."""
    return any("".join(seq) in names for seq in app.names + app.ambiguous_names)
