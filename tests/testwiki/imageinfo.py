"""File description fields shared by ``prop=imageinfo`` and ``list=allimages``."""
from __future__ import annotations

from typing import Any

from .apibase import ApiError, Ctx
from .model import Page
from .thumbs import original_url, thumb_dims, thumb_name, thumb_url

_THUMB_MIME = {'png': 'image/png', 'jpg': 'image/jpeg', 'gif': 'image/gif',
               'webp': 'image/webp'}


def file_props(ctx: Ctx, page: Page, props: set[str], width: int | None,
               height: int | None) -> dict[str, Any]:
    """One imageinfo entry for the current version of *page*'s file."""
    info = page.file
    assert info is not None
    base = ctx.wiki.base_url
    out: dict[str, Any] = {}
    if 'timestamp' in props:
        out['timestamp'] = info.timestamp
    if 'user' in props:
        out['user'] = info.user
    if 'userid' in props:
        out['userid'] = info.userid
    if 'size' in props or 'dimensions' in props:
        out['size'] = info.size
        out['width'] = info.width
        out['height'] = info.height
        if info.pagecount:
            out['pagecount'] = info.pagecount
        if info.duration is not None:
            out['duration'] = info.duration
    if 'comment' in props:
        out['comment'] = info.comment
    if 'parsedcomment' in props:
        out['parsedcomment'] = info.comment
    if 'canonicaltitle' in props:
        out['canonicaltitle'] = page.title
    if 'url' in props:
        if (width and width > 0) or (height and height > 0):
            tw, th, is_original = thumb_dims(info, width, height)
            # Must-render formats keep the requested step in the URL so a
            # client asking for a standard step gets a fetchable URL.
            step = width if width and width > 0 else tw
            out['thumburl'] = original_url(base, info) if is_original \
                else thumb_url(base, info, step)
            out['thumbwidth'] = tw
            out['thumbheight'] = th
            if 'thumbmime' in props:
                ext = thumb_name(info, step).rsplit('.', 1)[-1].lower()
                out['thumbmime'] = info.mime if is_original else \
                    _THUMB_MIME.get(ext, 'image/jpeg')
        out['url'] = original_url(base, info)
        out['descriptionurl'] = f'{base}/wiki/{page.title.replace(" ", "_")}'
        out['descriptionshorturl'] = f'{base}/w/index.php?curid={page.pageid}'
    if 'sha1' in props:
        out['sha1'] = info.sha1
    if 'mime' in props:
        out['mime'] = info.mime
    if 'mediatype' in props:
        out['mediatype'] = info.mediatype
    if 'bitdepth' in props:
        out['bitdepth'] = 8
    if 'metadata' in props:
        out['metadata'] = [{'name': 'width', 'value': info.width},
                           {'name': 'height', 'value': info.height}]
    if 'commonmetadata' in props:
        out['commonmetadata'] = []
    if 'extmetadata' in props:
        out['extmetadata'] = {
            'DateTime': {'value': info.timestamp.replace('T', ' ').rstrip('Z'),
                         'source': 'mediawiki-metadata', 'hidden': ''},
            'ObjectName': {'value': page.title.split(':', 1)[1].rsplit('.', 1)[0],
                           'source': 'mediawiki-metadata', 'hidden': ''},
        }
    return out


def imageinfo(ctx: Ctx, page: Page | None) -> dict[str, Any]:
    """The page-level keys ``prop=imageinfo`` adds to one page entry."""
    if page is not None and page.file is None and page.redirect_to:
        # File redirects answer with the target's file, like LocalRepo.
        page = ctx.wiki.store.page(page.redirect_to)
    if page is None or page.file is None:
        return {'imagerepository': ''}
    props = set(ctx.multi('iiprop') or ['timestamp', 'user'])
    width = ctx.integer('iiurlwidth', -1)
    height = ctx.integer('iiurlheight', -1)
    if (height > 0) and width <= 0 and 'url' in props:
        width = -1
    if ctx.get('iiurlparam'):
        param = ctx.text('iiurlparam')
        try:
            width = int(param.split('px')[0].split('-')[-1])
        except ValueError:
            raise ApiError('urlparamnormal', f'Could not parse iiurlparam for '
                           f'{page.title.split(":", 1)[1]}. Using only width '
                           f'and height.') from None
    if 'archivename' in props:
        props.discard('archivename')  # only the current version exists
    return {'imagerepository': 'local',
            'imageinfo': [file_props(ctx, page, props, width, height)]}
