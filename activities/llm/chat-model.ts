/**
 * The `@langchain/openai` chat-completions model the model client (./model) sends its requests through, with one
 * change to how json_schema requests go out.
 */
import { ChatOpenAICompletions, wrapOpenAIClientError, type OpenAIClient } from '@langchain/openai';

type CreateParams = OpenAIClient.Chat.ChatCompletionCreateParams;
type StreamingParams = OpenAIClient.Chat.ChatCompletionCreateParamsStreaming;
type NonStreamingParams = OpenAIClient.Chat.ChatCompletionCreateParamsNonStreaming;
type Completion = OpenAIClient.Chat.Completions.ChatCompletion;
type CompletionChunk = OpenAIClient.Chat.Completions.ChatCompletionChunk;

/**
 * The LangChain model, with one change: a `response_format` json_schema request goes out through the OpenAI
 * client's `create`, not its `parse`. `parse` throws on content that is not JSON and on an answer cut at the token
 * limit, which would take the answer away from the re-ask that can fix it (and retry the activity instead).
 */
export class ChatCompletionsModel extends ChatOpenAICompletions {
  override completionWithRetry(
    request: StreamingParams,
    options?: OpenAIClient.RequestOptions
  ): Promise<AsyncIterable<CompletionChunk>>;
  override completionWithRetry(request: NonStreamingParams, options?: OpenAIClient.RequestOptions): Promise<Completion>;
  override async completionWithRetry(
    request: CreateParams,
    options?: OpenAIClient.RequestOptions
  ): Promise<AsyncIterable<CompletionChunk> | Completion> {
    if (request.stream) return super.completionWithRetry(request, options);
    if (request.response_format?.type !== 'json_schema') return super.completionWithRetry(request, options);
    const { maxRetries, ...sdkOptions } = options ?? {};
    const clientOptions = this._getClientOptions(sdkOptions);
    return this.caller.callWithOptions({ maxRetries }, async () => {
      try {
        return await this.client.chat.completions.create(request as NonStreamingParams, clientOptions);
      } catch (e) {
        throw wrapOpenAIClientError(e);
      }
    });
  }
}
