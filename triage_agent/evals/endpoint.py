"""Where a live evaluation's model runs: the triage CLI's endpoint flags, passed on to every run
(`endpoint_argv`), and checked once before the first run as the CLI checks them, credentials
included (`live_endpoint_problem`), so a missing region or key is one usage error rather than a
failed run per scenario."""

# A live run's endpoint flags, passed on to the triage CLI as they are (docs/enterprise-models.md)
ENDPOINT_FLAGS = ("provider", "region", "project", "vertex_token_command", "base_url", "header")


def endpoint_argv(args):
    """The triage CLI flags of a live run's endpoint, from the evaluator's own."""
    argv = []
    for name in ENDPOINT_FLAGS:
        for value in (getattr(args, name) or []) if name == "header" else [getattr(args, name)]:
            if value is not None:
                argv += [f"--{name.replace('_', '-')}", value]
    return argv


def live_endpoint_problem(endpoint, model=None):
    """Why a live run could not reach its model, by the triage CLI's own checks of its endpoint
    flags and credentials (a key or token, AWS credentials and a region, a Google token and a
    project), or None: found once here rather than in every run."""
    from triage_agent import options
    from triage_agent.model import providers
    argv = ["evaluate", "--namespaces", "default", *(["--model", model] if model else []), *endpoint]
    try:
        args = options.build_parser().parse_args(argv)
        args.replay = None
        options.check_endpoint(args)
        providers.build(args)
    except (options.UsageError, providers.ProviderError) as exc:
        return str(exc)
    except SystemExit:   # argparse said why on stderr
        return "the triage CLI refused these endpoint flags"
    return None
