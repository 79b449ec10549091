"""serve's Slack options and their start: the flags, the tokens, the pieces wired together.

    --slack-channel CHANNEL_ID     turns Slack on
    SLACK_BOT_TOKEN  / --slack-bot-token-file FILE   xoxb-: chat.postMessage, update, ephemeral
    SLACK_APP_TOKEN  / --slack-app-token-file FILE   xapp-: apps.connections.open (Socket Mode)
    --slack-api-url URL            default https://slack.com/api/

A token file wins over the variable. Tokens are checked by their prefix only, never printed,
and never reach a run's child process (`child_env` drops the variables).
"""

import os
import re
import sys
from dataclasses import dataclass, field

from triage_agent.chat.bridge import SlackBridge
from triage_agent.chat.socketmode import SocketMode
from triage_agent.chat.webapi import Poster, WebApi

DEFAULT_API_URL = "https://slack.com/api/"
CHANNEL = re.compile(r"^[CG][A-Z0-9]{2,30}$")
TOKEN_VARIABLES = ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN")


class SlackConfigError(Exception):
    """Slack options that cannot work; the message says which."""


@dataclass
class SlackConfig:
    channel: str
    api_url: str
    bot_token: str = field(repr=False)
    app_token: str = field(repr=False)


def add_flags(parser):
    group = parser.add_argument_group("Slack (docs/slack.md)")
    group.add_argument("--slack-channel", metavar="CHANNEL_ID", help="post a thread per alert "
                       "in this channel and take approvals by button over Socket Mode (needs "
                       "SLACK_BOT_TOKEN and SLACK_APP_TOKEN, or the token files)")
    group.add_argument("--slack-bot-token-file", metavar="FILE", help="the bot token (xoxb-) "
                       "(default: $SLACK_BOT_TOKEN)")
    group.add_argument("--slack-app-token-file", metavar="FILE", help="the app-level token "
                       "(xapp-) for Socket Mode (default: $SLACK_APP_TOKEN)")
    group.add_argument("--slack-api-url", default=DEFAULT_API_URL, metavar="URL",
                       help=f"the Slack Web API base (default {DEFAULT_API_URL})")


def load(args, environ=os.environ):
    """The SlackConfig of the options (None without --slack-channel), or SlackConfigError."""
    files = (args.slack_bot_token_file, args.slack_app_token_file)
    if not args.slack_channel:
        if any(files):
            raise SlackConfigError("the Slack token files need --slack-channel CHANNEL_ID")
        return None
    if not CHANNEL.match(args.slack_channel):
        raise SlackConfigError(f"--slack-channel {args.slack_channel!r}: give the channel's "
                               "id (C… or G…, from the channel's details), not its name")
    if not args.slack_api_url.startswith(("https://", "http://")):
        raise SlackConfigError(f"--slack-api-url {args.slack_api_url!r}: give an http(s) URL")
    bot = _token(args.slack_bot_token_file, "--slack-bot-token-file", "SLACK_BOT_TOKEN",
                 "xoxb-", environ)
    app = _token(args.slack_app_token_file, "--slack-app-token-file", "SLACK_APP_TOKEN",
                 "xapp-", environ)
    return SlackConfig(args.slack_channel, args.slack_api_url, bot, app)


def _token(path, flag, variable, prefix, environ):
    if path:
        try:
            token = open(path, encoding="utf-8").read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise SlackConfigError(f"{flag}: {getattr(exc, 'strerror', None) or exc}") from None
        where = flag
    else:
        token, where = environ.get(variable, "").strip(), variable
        if not token:
            raise SlackConfigError(f"--slack-channel needs {variable} or {flag}")
    if not token.startswith(prefix) or any(c.isspace() for c in token):
        raise SlackConfigError(f"{where}: not a {prefix} token (one word starting {prefix})")
    return token


def child_env(environ=os.environ) -> dict:
    """The environment for run children: serve's, without the Slack tokens."""
    return {k: v for k, v in environ.items() if k not in TOKEN_VARIABLES}


class Slack:
    """The running Slack side of one serve: poster, bridge, Socket Mode."""

    def __init__(self, config, *, outbox, store, operators, base_url, connect=None):
        self.poster = Poster(WebApi(config.api_url, config.bot_token))
        self.bridge = SlackBridge(poster=self.poster, channel=config.channel, outbox=outbox,
                                  store=store, operators=operators, base_url=base_url)
        options = {"connect": connect} if connect else {}
        self.socket = SocketMode(WebApi(config.api_url, config.app_token), self.bridge.handle,
                                 **options)

    @property
    def failures(self):
        return self.poster.failures

    def start(self):
        self.socket.start()
        return self

    def close(self, grace=10.0):
        self.socket.stop(timeout=grace)
        self.poster.close(grace)


def also(first, then):
    """A callback that calls `first` as before, then `then`, whose failure is only logged:
    Slack's side never breaks a run's outcome or a decision."""
    def call(*args):
        result = first(*args)
        try:
            then(*args)
        except Exception as exc:
            print(f"triage-agent serve: slack: {type(exc).__name__}: {exc}", file=sys.stderr,
                  flush=True)
        return result
    return call
