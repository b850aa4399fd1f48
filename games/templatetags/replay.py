"""{% replay_links replay first_label=… previous_label=… next_label=… last_label=…
as links %}: the replay's four step links (games.presentation.ReplayNav.links),
labelled with words the template marks for translation (`_("« First")`), so
that they stay in the templates' catalog."""

from django import template

from ..presentation import ReplayLink, ReplayNav

register = template.Library()


@register.simple_tag
def replay_links(
    replay: ReplayNav,
    *,
    first_label: str,
    previous_label: str,
    next_label: str,
    last_label: str,
) -> tuple[ReplayLink, ...]:
    return replay.links(
        first_label=first_label,
        previous_label=previous_label,
        next_label=next_label,
        last_label=last_label,
    )
